"""The decode_gemv lever, worker side: a model's plain linear layers, called with a few rows (a decode step's tokens),
computed by the library's Triton GEMV (kernels/triton/gemv) instead of cuBLAS.

At decode a linear layer is a matrix-vector product bound by its weights' bytes, which cuBLAS's small tiles read well
below the device's copy bandwidth. The kernel streams 2-4 weight rows a program along their contiguous K, with launch
params per shape and device as a cold sweep measured them (kernels/triton/gemv/tuned.json; a shape where cuBLAS won
stays with cuBLAS). What it gained, and where: docs/decisions.md, decode_gemv. Every `torch.nn.Linear` of the model (a fused
projection's layer too; not the output embeddings, which cuBLAS reads near the roof, nor a quantized layer) gets a
forward that sends a call of at most the kernel's MAX_ROWS rows to its custom op and any other (a prefill's GEMM)
to torch's linear. A copy of a routed model is routed too (a kept worker's candidate).

The tuned launch params were measured for one row and are used for one-row calls only. A call of 2 to MAX_ROWS rows
goes to torch's linear (cuBLAS) unless FEW_ROWS is on: the kernel's few-row tensor-core tile loses to cuBLAS at batch 8
(docs/decisions.md: decode_gemv).

With FOLD_NORMS, a decoder layer's RMSNorms are folded into the GEMVs that read them (transformers' layer pattern: `input_layernorm`
read only by the attention's q/k/v projections, `post_attention_layernorm` only by the MLP's gate/up; an RMSNorm as
Llama, Mistral and Qwen compute it, with `variance_epsilon`): the norm module returns its input and each of those
layers normalizes the row itself inside the GEMV, rounding as the norm does; a call with more rows (a prefill) runs
the norm and torch's linear. The norms' kernels and launches leave the decode step (docs/decisions.md: decode_gemv).

With FOLD_ACTS (on), a gated MLP (gate_proj, up_proj, down_proj and a SiLU act_fn: Llama, Mistral, Qwen) whose down
projection is routed computes silu(gate) * up inside that GEMV: the activation's kernel and launch leave the step.
"""

from __future__ import annotations

import functools
import types
from collections import Counter
from typing import Any

from hyperloom.tools.workload.worker.levers.kernel_route import Counts, counted_op, launcher, unbuilt

OP_NAME = "hyperloom::decode_gemv"
FOLD_NORMS = False  # True: fold the norms (no net gain measured: docs/decisions.md, decode_gemv); roof_decode.py's A/B sets it
# a gated MLP's silu(gate) * up folded into its down projection's GEMV (docs/decisions.md: decode_gemv); roof_decode.py's A/B sets it
FOLD_ACTS = True
ACTIVATIONS = ("SiLU", "SiLUActivation")  # torch's and transformers' SiLU modules: what the kernel's fold computes
NORM_ATTR = "_hyperloom_folded_norm"  # on a routed layer: the RMSNorm it applies to its input (in __dict__: not a submodule)
FOLDS = (("input_layernorm", "self_attn", ("q_proj", "k_proj", "v_proj")), ("post_attention_layernorm", "mlp", ("gate_proj", "up_proj")))
FEW_ROWS = False  # calls of 2..MAX_ROWS rows to the kernel's few-row tile (off: cuBLAS measured faster there); roof_decode.py's A/B sets it
EXPECTED = ("a GEMM", "a few rows")  # a prefill's GEMM, a few rows without FEW_ROWS: torch's linear, by design
KERNELS = ("gemv_kernel",)
COUNTS = Counts()
_STATE: dict[str, Any] = {}


def not_placed(torch: Any, model: Any, head: Any) -> Counter[str]:
    """The model's leaf modules that multiply by a 2-D weight but are no plain torch.nn.Linear (GPT-2's Conv1D, its weight
    stored transposed; a quantized or a library's linear), by type: what the route leaves to torch, and says so. The
    output embeddings and embedding tables are not counted."""
    return Counter(type(m).__name__ for m in model.modules()
                   if m is not head and type(m) is not torch.nn.Linear and not isinstance(m, torch.nn.Embedding)
                   and not any(True for _ in m.children())
                   # its own (a fused part's is not)
                   and (weight := dict(m.named_parameters(recurse=False)).get("weight")) is not None and weight.dim() == 2)


def route(torch: Any, model: Any) -> dict[str, Any]:
    """Give every plain linear layer of `model` but its output embeddings the routed forward: what was routed."""
    if model is None or not hasattr(model, "modules"):
        return {"routed": 0, "what": "linear layer(s) routed", "why": "the workload has no `model` attribute with modules"}
    _install(torch)
    head = model.get_output_embeddings() if callable(getattr(model, "get_output_embeddings", None)) else None
    plain = [m for m in model.modules() if type(m) is torch.nn.Linear and m is not head]
    layers = [m for m in plain if _choice(torch, m) != "cublas"]
    broken = unbuilt(torch, layers[0].weight.device, _probes(torch, model, layers)) if layers else ""
    if broken:
        return {"routed": 0, "what": "linear layer(s) routed", "why": broken}
    for layer in layers:
        layer.forward = types.MethodType(_forward, layer)
    folded = _fold_norms(torch, model, set(map(id, layers))) if FOLD_NORMS else 0
    acts = _fold_acts(model, set(map(id, layers))) if FOLD_ACTS else 0
    left = len(plain) - len(layers)
    others = not_placed(torch, model, head)
    kinds = ", ".join(f"{n} x {kind}" for kind, n in others.most_common())
    apart = f"{sum(others.values())} matmul layer(s) of other types left to torch ({kinds}: only a plain torch.nn.Linear is routed)"
    what = ("linear layer(s) routed" + (f", {folded} RMSNorm(s) folded into the GEMVs that read them" if folded else "")
            + (f", {acts} MLP activation(s) folded into their down projection's GEMV" if acts else "")
            + (f", {left} left to cuBLAS (measured faster at their shape on this device: kernels/triton/gemv/tuned.json)" if left else "")
            + (f", {apart}" if others else ""))
    why = "" if layers else ("every plain linear layer's shape is one where cuBLAS measured faster on this device" if plain
                             else "the model has no plain torch.nn.Linear layer besides its output embeddings"
                                  + (f"; {apart}" if others else ""))
    weights = sum(t.numel() * t.element_size() for layer in layers for t in (layer.weight, layer.bias) if t is not None)
    return {"routed": len(layers), "what": what, "why": why, "kernel_bytes": {KERNELS[0]: weights} if layers else {}}


def _probes(torch: Any, model: Any, layers: list[Any]) -> list[tuple[str, Any]]:
    """One launch a distinct weight shape, as a one-row call runs it (its measured params), and the folds the route
    will make (an MLP's activation into its down projection; the norms with FOLD_NORMS): on zeros."""
    run, probes, seen = _STATE["launcher"].gemv, [], set()
    for layer in layers:
        weight, bias = layer.weight, layer.bias
        chosen = _choice(torch, layer)
        key = (tuple(weight.shape), weight.dtype, bias is not None)
        if key not in seen:
            seen.add(key)
            row = weight.new_zeros(1, weight.shape[1])
            probes.append((f"a row through {weight.shape[0]}x{weight.shape[1]}",
                           functools.partial(run, row, weight, bias, chosen if isinstance(chosen, dict) else None)))
            if FOLD_NORMS:
                probes.append((f"a row through {weight.shape[0]}x{weight.shape[1]}, its RMSNorm folded",
                               functools.partial(run, row, weight, bias, None, weight.new_ones(weight.shape[1]))))
    routed = set(map(id, layers))
    downs = {tuple(m.down_proj.weight.shape): m.down_proj for m in model.modules()
             if FOLD_ACTS and id(getattr(m, "down_proj", None)) in routed and type(getattr(m, "act_fn", None)).__name__ in ACTIVATIONS}
    for (n_out, k_in), down in downs.items():
        row = down.weight.new_zeros(1, k_in)
        probes.append((f"a row through {n_out}x{k_in}, the activation folded", functools.partial(run, row, down.weight, down.bias, up=row)))
    return probes


def _choice(torch: Any, layer: Any) -> dict | str | None:
    """The measured choice for the layer's weight shape on its device (launch params, "cublas", or None: defaults)."""
    return _STATE["launcher"].choice(layer.weight.shape[0], layer.weight.shape[1], _device_name(torch, layer.weight.device))


@functools.cache
def _device_name(torch: Any, device: Any) -> str:
    """The name the tuned table is keyed by (torch's device name on a GPU: "NVIDIA H200"; "cpu" on a CPU)."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def _fold_norms(torch: Any, model: Any, routed: set[int]) -> int:
    """Fold each decoder layer's RMSNorm into the routed layers that alone read it (FOLDS); how many were folded."""
    folded = 0
    for layer in list(model.modules()):
        for norm_name, block_name, readers in FOLDS:
            norm, block = getattr(layer, norm_name, None), getattr(layer, block_name, None)
            if not _plain_rmsnorm(norm) or block is None:
                continue
            targets = _computing(torch, block, readers)
            if not targets or any(id(t) not in routed for t in targets):
                continue
            for target in targets:
                target.__dict__[NORM_ATTR] = norm
            setattr(layer, norm_name, _folded_class(torch)(norm))
            folded += 1
    return folded


def _fold_acts(model: Any, routed: set[int]) -> int:
    """Give each gated MLP (gate_proj, up_proj, down_proj, a SiLU act_fn) whose down projection is routed the forward
    that folds silu(gate) * up into that GEMV; how many."""
    folded = 0
    for module in list(model.modules()):
        down = getattr(module, "down_proj", None)
        if (id(down) in routed and type(getattr(module, "act_fn", None)).__name__ in ACTIVATIONS
                and callable(getattr(module, "gate_proj", None)) and callable(getattr(module, "up_proj", None))):
            module.forward = types.MethodType(_mlp_forward, module)
            folded += 1
    return folded


def _plain_rmsnorm(norm: Any) -> bool:
    """An RMSNorm computed as Llama's (x * rsqrt(mean(x^2) + variance_epsilon), times its weight; Gemma's 1 + weight has no
    variance_epsilon): the kernel's fold computes exactly that."""
    weight = getattr(norm, "weight", None)
    return type(norm).__name__.endswith("RMSNorm") and hasattr(norm, "variance_epsilon") and weight is not None and weight.dim() == 1


def _computing(torch: Any, block: Any, readers: tuple[str, ...]) -> list[Any]:
    """The linear layers computing `readers` of `block` (a fused group's layer once, its members' own otherwise); empty
    when one is neither (quantized, custom)."""
    found: dict[int, Any] = {}
    for name in readers:
        member = getattr(block, name, None)
        shared = getattr(member, "shared", None)
        layer = shared.fused if shared is not None else member
        if type(layer) is not torch.nn.Linear:
            return []
        found[id(layer)] = layer
    return list(found.values())


@functools.cache
def _folded_class(torch: Any) -> type:
    class FoldedNorm(torch.nn.Module):
        """An RMSNorm whose work the layers reading it do (decode_gemv): its input, unchanged; the norm kept as a child
        (its weight stays in the model's state)."""

        def __init__(self, norm: Any) -> None:
            super().__init__()
            self.norm = norm

        def forward(self, x: Any) -> Any:
            return x

    return FoldedNorm


def _install(torch: Any) -> None:
    if _STATE:
        return
    kernel_module = launcher(torch, "gemv")

    def run(x: Any, weight: Any, bias: Any, norm: Any, eps: float, up: Any) -> Any:
        chosen = kernel_module.choice(weight.shape[0], weight.shape[1], _device_name(torch, x.device)) if x.numel() == x.shape[-1] else None
        return kernel_module.gemv(x, weight, bias, chosen if isinstance(chosen, dict) else None, norm, eps, up)

    op = counted_op(torch, OP_NAME, "(Tensor x, Tensor weight, Tensor? bias, Tensor? norm, float eps, Tensor? up) -> Tensor", COUNTS, run,
                    lambda x, weight, bias, norm, eps, up: x.new_empty(*x.shape[:-1], weight.shape[0]))
    _STATE.update(launcher=kernel_module, op=op, linear=torch.nn.functional.linear)


def _forward(self: Any, x: Any) -> Any:
    norm = getattr(self, NORM_ATTR, None)
    why = _declined(x, self.weight, self.bias, None if norm is None else norm.weight)
    if why:
        COUNTS.fell_back(_expected(why) or why)
        return _STATE["linear"](x if norm is None else norm(x), self.weight, self.bias)
    if norm is None:
        return _STATE["op"](x, self.weight, self.bias, None, 0.0, None)
    return _STATE["op"](x, self.weight, self.bias, norm.weight, float(norm.variance_epsilon), None)


def _mlp_forward(self: Any, x: Any) -> Any:
    """A gated MLP with its activation folded into the down projection's GEMV (a call of more rows than the kernel
    takes: the MLP as written, the down projection's own forward counting its GEMM)."""
    gate, up, down = self.gate_proj(x), self.up_proj(x), self.down_proj
    why = _declined(gate, down.weight, down.bias, None, up)
    if why:
        if not _expected(why):  # counted by the down projection's own forward below
            COUNTS.fell_back(why)
        return down(self.act_fn(gate) * up)
    return _STATE["op"](gate, down.weight, down.bias, None, 0.0, up)


def _declined(x: Any, weight: Any, bias: Any, norm: Any = None, up: Any = None) -> str:
    """Why the call goes to torch's linear (empty: the kernel takes it): what the kernel cannot take, or a few rows
    while FEW_ROWS is off."""
    why = _STATE["launcher"].unsupported(x, weight, bias, norm, up)
    rows = x.numel() // max(x.shape[-1], 1)
    if not why and rows > 1 and not FEW_ROWS:
        return f"{rows} rows: {FEW_ROWS_RUN_CUBLAS}"
    return why


FEW_ROWS_RUN_CUBLAS = "a few rows run cuBLAS (FEW_ROWS off: the kernel's few-row tile lost to it at batch 8)"


def _expected(why: str) -> str:
    """The EXPECTED reason the call went to torch's linear by design (a prefill's GEMM, a few rows), or empty."""
    if why.endswith("more is a GEMM"):
        return "a GEMM"
    return "a few rows" if why.endswith(FEW_ROWS_RUN_CUBLAS) else ""
