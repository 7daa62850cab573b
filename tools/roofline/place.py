"""Placing work under the roof: the ceiling that bounds it at its intensity, and a benchmarked kernel's placement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hyperloom.tools.roofline.models import Ceiling, Placement

if TYPE_CHECKING:
    from hyperloom.tools.bench.models import BenchResult


@dataclass(frozen=True)
class Roof:
    """The ceiling that bounds a piece of work, what it can attain there, in the unit of its bound."""

    ceiling: Ceiling
    attainable: float
    unit: Literal["GB/s", "TFLOP/s"]
    bound: Literal["memory", "compute"]


def roof_at(flops: float | None, bytes_moved: float | None, memory: Ceiling | None, compute: Ceiling | None) -> Roof | None:
    """Work with flops and a compute ceiling under min(compute, intensity x memory) in TFLOP/s; else work with bytes
    under the memory ceiling in GB/s; None when no given ceiling fits."""
    if flops and compute is not None:
        if bytes_moved and memory is not None and flops / bytes_moved * memory.value / 1e3 < compute.value:
            return Roof(memory, flops / bytes_moved * memory.value / 1e3, "TFLOP/s", "memory")
        return Roof(compute, compute.value, "TFLOP/s", "compute")
    if bytes_moved and memory is not None:
        return Roof(memory, memory.value, "GB/s", "memory")
    return None


def place(result: BenchResult, measured: list[Ceiling], same_size_read: BenchResult | None = None) -> Placement:
    """A timed kernel against the best measured memory and compute ceilings (roof_at), and with `same_size_read` (a read
    of as many bytes) its bandwidth as a percent of that read's."""
    memory = max((c for c in measured if c.kind == "memory"), key=lambda c: c.value, default=None)
    compute = max((c for c in measured if c.kind == "compute"), key=lambda c: c.value, default=None)
    if result.kernel is None:
        raise ValueError("placing needs a timed result")
    roof = roof_at(result.flops, result.bytes_moved, memory, compute)
    if roof is None:
        raise ValueError("placing needs a metric (bytes or flops) with a matching measured ceiling")
    achieved = (result.tflops if roof.unit == "TFLOP/s" else result.bandwidth_gbps) or 0.0
    same_gbps = same_size_read.bandwidth_gbps if same_size_read is not None and same_size_read.ok else None
    return Placement(
        same_size_read_gbps=same_gbps,
        percent_of_same_size_read=100 * result.bandwidth_gbps / same_gbps if same_gbps and result.bandwidth_gbps else None,
        name=f"{result.name}/{result.variant}" if result.variant else result.name,
        arithmetic_intensity=result.flops / result.bytes_moved if result.flops and result.bytes_moved else None,
        achieved_gbps=result.bandwidth_gbps, achieved_tflops=result.tflops,
        attainable=roof.attainable, percent_of_roof=100 * achieved / roof.attainable if roof.attainable else 0.0,
        bound=roof.bound, roof=roof.ceiling.name, evidence=result.evidence,
    )
