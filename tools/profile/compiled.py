"""Kernels that ran inside compiled code: a torch.compile region ("Torch-Compiled Region: 0/0", "CompiledFunction")
or a captured graph's replay. torch.profiler records no op inside them (Inductor's generated code launches its Triton
kernels and calls the library GEMMs itself), so every such kernel links to the region, and one region would be one
hotspot with no shapes. Each is attributed instead by what it carries itself: its name (Inductor's kind and the ops it
fused, or a library kernel's family) and its launch shape. Their bytes and flops stay unmodelled: no shapes."""

from __future__ import annotations

import re
from dataclasses import dataclass

REGION = re.compile(r"^(?:Torch-Compiled Region|CompiledFunction|## Call CompiledFxGraph|CUDAGraph|cudaGraphLaunch|hipGraphLaunch)")
INDUCTOR = re.compile(r"^triton_(poi|per|red|tem|for|spl)_(?:fused_?)?(.*?)(?:_\d+)?$")
KINDS = {"poi": "pointwise", "per": "persistent reduction", "red": "reduction", "tem": "GEMM template", "for": "foreach",
         "spl": "split scan"}


def is_compiled_region(op_name: str) -> bool:
    return REGION.match(op_name) is not None


@dataclass(frozen=True)
class InductorKernel:
    kind: str  # "pointwise", "persistent reduction", ...
    fused: str  # the ops Inductor fused, as its name lists them ("_to_copy_add_mean_mul_pow_rsqrt")

    @property
    def is_norm(self) -> bool:
        """A mean (or variance) then an rsqrt: the shape of RMSNorm and LayerNorm."""
        return re.search(r"(?:^|_)(?:mean|var_mean|var)(?:_|$)", self.fused) is not None and "rsqrt" in self.fused


def inductor_kernel(kernel_name: str) -> InductorKernel | None:
    """Inductor's own Triton kernel (triton_poi_fused_add_mul_0, ...), read from its name; None for any other."""
    found = INDUCTOR.match(kernel_name)
    return InductorKernel(KINDS[found.group(1)], found.group(2)) if found else None


def region_label(kernel_name: str, launch: str | None) -> str:
    return f"{kernel_name} [{launch}]" if launch else kernel_name


def region_note(kernel_name: str, region: str) -> str:
    """How a kernel inside compiled code was attributed, and what that leaves out."""
    inductor = inductor_kernel(kernel_name)
    what = f"Inductor's {inductor.kind} kernel fusing {inductor.fused or 'one op'}" if inductor else \
        "a library kernel the compiled code called"
    return (f"ran inside {region}, where the trace records no op: attributed by its name ({what}) and launch shape; no "
            "input shapes, so no byte/flop model and no roof placement")
