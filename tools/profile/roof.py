"""The roof each hotspot is placed under: a roofline result (file or measured now) or the datasheet (ASSUMED)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import Tag
from hyperloom.tools.roofline.datasheet import datasheet_ceilings
from hyperloom.tools.roofline.models import Ceiling, RooflineResult
from hyperloom.tools.roofline.place import roof_at

# The compute ceilings that bound a GEMM or attention, by the dtype of its operands (first match in each family wins
# when present; bf16 and fp16 run at the same tensor-core rate on the parts Hyperloom knows, so they share one).
COMPUTE_CEILINGS = {
    "fp32": ("fma", "datasheet FP32"),
    "fp16": ("mma_f16", "matrix_f16", "datasheet FP16 dense"),
    "int8": ("mma_i8", "matrix_i8"),
}
DTYPE_FAMILY = {"float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "fp16", "signed char": "int8", "unsigned char": "int8"}
HOST_LINK = "a host link, not placed on the DRAM roof"


@dataclass
class Roofs:
    ceilings: list[Ceiling]
    source: str

    def memory(self) -> Ceiling | None:
        """The best memory ceiling, as roofline places kernels: measured ones before datasheet ones."""
        return _best([c for c in self.ceilings if c.kind == "memory"])

    def compute(self, dtype: str) -> Ceiling | None:
        names = COMPUTE_CEILINGS.get(DTYPE_FAMILY.get(dtype, ""), ())
        return _best([c for c in self.ceilings if c.kind == "compute" and c.name in names])


def _best(ceilings: list[Ceiling]) -> Ceiling | None:
    measured = [c for c in ceilings if c.evidence.tag == Tag.MEASURED]
    return max(measured or ceilings, key=lambda c: c.value, default=None)


def _plain(name: str) -> str:
    return " ".join(name.lower().replace("nvidia", "").replace("amd", "").replace("host cpu:", "").split())


def same_device(a: str, b: str) -> bool | None:
    """Whether two device names name one part (None when either is unknown)."""
    x, y = _plain(a), _plain(b)
    if not x or not y or x in ("unknown", "radeon graphics") or y in ("unknown", "radeon graphics"):
        return None
    return x in y or y in x


def from_file(path: Path, label: str, trace_device: str | None) -> tuple[Roofs, str | None]:
    """The measured ceilings in a roofline.json, refused when it names another device; a finding when it cannot be checked."""
    try:
        result = RooflineResult.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise HyperloomError(f"{label} is not a roofline result ({str(exc)[:160]})",
                             "pass a roofline.json written by `hyperloom roofline`") from exc
    if not result.measured:
        raise HyperloomError(f"{label} has no measured ceiling",
                             "measure the roofline on this device again (hyperloom roofline --target T)")
    verdict = same_device(result.device, trace_device or "")
    if verdict is False:
        raise HyperloomError(f"{label} was measured on {result.device!r}, but the trace ran on {trace_device!r}",
                             f"measure the roofline on {trace_device} (hyperloom roofline --target T there), or pass roof_target to "
                             "measure it now")
    note = None if verdict else (f"the roofline in {label} ({result.device or 'no device named'}) could not be checked against the trace's "
                                 f"device ({trace_device or 'not named'})")
    return Roofs(result.measured, f"roofline file {label} ({result.device}, {result.summary[:120]})"), note


def from_result(result: RooflineResult) -> Roofs:
    return Roofs(result.measured, f"roofline measured now on {result.device or result.target}")


def from_datasheet(device_name: str | None, target: str = "unspecified") -> Roofs:
    ceilings = datasheet_ceilings(device_name or "", target) if device_name else []
    if not ceilings:
        return Roofs([], "none: no roofline given and no datasheet for this device")
    return Roofs(ceilings, f"datasheet peaks of {device_name} (ASSUMED)")


@dataclass(frozen=True)
class WorkPlacement:
    roof: str | None
    attainable: float | None
    unit: str | None
    percent: float | None
    bound: str | None
    tag: Tag | None


NO_PLACEMENT = WorkPlacement(None, None, None, None, None, None)


def place_work(kernel_class: str, dtype: str | None, bytes_moved: int | None, flops: int | None, seconds: float, roofs: Roofs,
               host_link: bool = False) -> WorkPlacement:
    """Percent of the roof at the work's intensity (roofline's roof_at): GEMM and attention under their dtype's compute
    ceiling, everything else under the memory ceiling (their flops are conventions, their bytes are the work)."""
    if seconds <= 0 or host_link:
        return NO_PLACEMENT
    memory = roofs.memory()
    if kernel_class in ("gemm", "attention"):
        compute = roofs.compute(dtype) if dtype is not None else None
        if not flops or compute is None:
            return NO_PLACEMENT  # a GEMM under the memory roof alone would look far better than it is
        roof = roof_at(flops, bytes_moved, memory, compute)
    else:
        roof = roof_at(None, bytes_moved, memory, None)
    if roof is None:
        return NO_PLACEMENT
    achieved = (flops or 0) / seconds / 1e12 if roof.unit == "TFLOP/s" else (bytes_moved or 0) / seconds / 1e9
    return WorkPlacement(roof.ceiling.name, roof.attainable, roof.unit, 100 * achieved / roof.attainable, roof.bound,
                         roof.ceiling.evidence.tag)
