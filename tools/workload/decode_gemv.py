"""The decode_gemv lever, worker side: a model's plain linear layers, called with a few rows (a decode step's tokens),
computed by the library's Triton GEMV (kernels/triton/gemv) instead of cuBLAS.

At decode a linear layer is a matrix-vector product bound by its weights' bytes. On the H200 cuBLAS read a 1.2B
decoder's small projections at about 1.8 TB/s (q/k/v and o, 64x8 tiles) and its down projection at 2.6 TB/s (split-K
and a reduce kernel), against 4.1 TB/s of device copy (results/h200/roof): a third of the token's GEMM time. The
kernel streams each weight row once along its contiguous K. Every `torch.nn.Linear` of the model (a fused
projection's layer too; not the output embeddings, which cuBLAS reads near the roof, nor a quantized layer) gets a
forward that sends a call of at most the kernel's MAX_ROWS rows to its custom op and any other (a prefill's GEMM)
to torch's linear. A copy of a routed model is routed too (a kept worker's candidate).
"""

from __future__ import annotations

import types
from typing import Any

from hyperloom.tools.workload.kernel_route import Counts, launcher

OP_NAME = "hyperloom::decode_gemv"
EXPECTED = ("a GEMM",)  # a call with more rows than the kernel takes (a prefill): torch's linear, by design
KERNELS = ("gemv_kernel",)
COUNTS = Counts()
_STATE: dict[str, Any] = {}


def route(torch: Any, model: Any) -> dict[str, Any]:
    """Give every plain linear layer of `model` but its output embeddings the routed forward: what was routed."""
    if model is None or not hasattr(model, "modules"):
        return {"routed": 0, "what": "linear layer(s)", "why": "the workload has no `model` attribute with modules"}
    _install(torch)
    head = model.get_output_embeddings() if callable(getattr(model, "get_output_embeddings", None)) else None
    layers = [m for m in model.modules() if type(m) is torch.nn.Linear and m is not head]
    for layer in layers:
        layer.forward = types.MethodType(_forward, layer)
    return {"routed": len(layers), "what": "linear layer(s)", "why": "" if layers else "the model has no plain torch.nn.Linear layer besides its output embeddings"}


def _install(torch: Any) -> None:
    if _STATE:
        return
    kernel_module = launcher(torch, "gemv")

    def kernel(x: Any, weight: Any, bias: Any) -> Any:
        COUNTS.kernel += 1
        return kernel_module.gemv(x, weight, bias, kernel_module.TUNED.get((weight.shape[0], weight.shape[1])))

    op = torch.library.custom_op(OP_NAME, kernel, mutates_args=(), schema="(Tensor x, Tensor weight, Tensor? bias) -> Tensor")

    @op.register_fake
    def _(x, weight, bias):  # noqa: ANN001, ANN202
        return x.new_empty(*x.shape[:-1], weight.shape[0])

    _STATE.update(launcher=kernel_module, op=op, linear=torch.nn.functional.linear)


def _forward(self: Any, x: Any) -> Any:
    why = _STATE["launcher"].unsupported(x, self.weight, self.bias)
    if why:
        COUNTS.fell_back("a GEMM" if why.endswith("more is a GEMM") else why)
        return _STATE["linear"](x, self.weight, self.bias)
    return _STATE["op"](x, self.weight, self.bias)
