"""The weight-only quantization levers, worker side (int8_weight_only, fp8_weight_only; docs/decisions.md: The decode levers).

At decode, batch 1, a decoder's step reads every weight once a token and little else: the bytes of the weights are
its time. Stored in int8 or fp8 (e4m3) with one scale per output row, a linear layer's weights are half their bf16
bytes; its forward converts them to the activations' dtype inside the GEMM's operand and scales the product, which a
compiled step (Inductor, gpt-fast's int8 path) fuses into one kernel reading the narrow weights. Eager, the conversion
is a kernel of its own that writes the wide weights back: slower, not faster; stack it on compile or decode_loop.

Numerics change beyond the model's own (each weight rounded to 255 levels, or to e4m3's 3 mantissa bits): the derived
rule refuses it on a decoder, and optimize tries it only when the user declared the looser tolerance they accept
(levers.Lever.lossy). Every plain torch.nn.Linear with floating-point weights is converted, the LM head too (a tied
one gets its own narrow copy; the embedding keeps the wide weights it looks up), and the fused layer of each group
fuse_projections made (applied first: the group then reads narrow weights)."""

from __future__ import annotations

import functools
from typing import Any

from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.workload.worker.levers import fused_projections

FORMATS = {"int8": ("int8", 127.0), "fp8": ("float8_e4m3fn", 448.0)}  # storage dtype, the largest magnitude it holds


@functools.cache
def _layer_class(torch: Any) -> type:
    functional = torch.nn.functional

    class WeightOnlyLinear(torch.nn.Module):
        """A linear layer whose weight is stored narrow (`weight`, int8 or fp8, one row per output) with a scale per row."""

        def __init__(self, linear: Any, storage: Any, largest: float) -> None:
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            with torch.no_grad():
                wide = linear.weight.detach().float()
                scale = wide.abs().amax(dim=1).clamp(min=1e-12) / largest
                narrow = wide / scale[:, None]
                narrow = narrow.round().clamp(-largest, largest) if storage == torch.int8 else narrow.clamp(-largest, largest)
            self.register_buffer("weight", narrow.to(storage))
            self.register_buffer("scale", scale.to(linear.weight.dtype))
            self.bias = linear.bias

        def forward(self, x: Any) -> Any:
            out = functional.linear(x, self.weight.to(x.dtype)) * self.scale.to(x.dtype)
            return out if self.bias is None else out + self.bias

        def extra_repr(self) -> str:
            return (f"in_features={self.in_features}, out_features={self.out_features}, weight "
                    f"{str(self.weight.dtype).removeprefix('torch.')}, a scale per row")

    return WeightOnlyLinear


def quantize(torch: Any, model: Any, form: str) -> dict[str, int]:
    """Every plain floating-point torch.nn.Linear of `model` in `form` (FORMATS), in place: how many layers, and their
    weights' bytes before and after (the scales included)."""
    if torch is None or not isinstance(model, torch.nn.Module):
        raise WorkloadContractError(f"the {form}_weight_only lever needs the workload's `model` attribute to be a torch.nn.Module; this "
                                    "workload has none")
    storage_name, largest = FORMATS[form]
    storage = getattr(torch, storage_name, None)
    if storage is None:
        raise WorkloadContractError(f"this torch ({torch.__version__}) has no {storage_name}: leave the {form}_weight_only lever out")
    layer = _layer_class(torch)
    counted = {"layers": 0, "bytes_before": 0, "bytes_after": 0}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear or not child.weight.is_floating_point():
                continue
            narrow = layer(child, storage, largest)
            counted["layers"] += 1
            counted["bytes_before"] += child.weight.numel() * child.weight.element_size()
            counted["bytes_after"] += (narrow.weight.numel() * narrow.weight.element_size()
                                       + narrow.scale.numel() * narrow.scale.element_size())
            setattr(parent, name, narrow)
    fused_projections.refresh(model)
    return counted
