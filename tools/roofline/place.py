"""Placing a benchmarked kernel under the measured roof."""

from __future__ import annotations

from hyperloom.tools.bench.models import BenchResult
from hyperloom.tools.roofline.models import Ceiling, Placement


def place(result: BenchResult, measured: list[Ceiling], same_size_read: BenchResult | None = None) -> Placement:
    """Arithmetic intensity, attainable performance, percent of roof and the bound, against the best
    measured memory ceiling and (for kernels with a flop count) the best compute ceiling. Attainable
    and achieved are in TFLOP/s when the kernel counts flops, else in GB/s. With `same_size_read` (a read
    of as many bytes), also the kernel's bandwidth as a percent of that read's."""
    memory = max((c for c in measured if c.kind == "memory"), key=lambda c: c.value, default=None)
    compute = max((c for c in measured if c.kind == "compute"), key=lambda c: c.value, default=None)
    if result.kernel is None:
        raise ValueError("placing needs a timed result")
    intensity = result.flops / result.bytes_moved if result.flops and result.bytes_moved else None
    if result.flops and compute is not None:
        achieved = result.tflops or 0.0
        if intensity is not None and memory is not None and intensity * memory.value / 1e3 < compute.value:
            attainable, bound, roof = intensity * memory.value / 1e3, "memory", memory.name
        else:
            attainable, bound, roof = compute.value, "compute", compute.name
    elif result.bytes_moved and memory is not None:
        achieved, attainable, bound, roof = result.bandwidth_gbps or 0.0, memory.value, "memory", memory.name
    else:
        raise ValueError("placing needs a metric (bytes or flops) with a matching measured ceiling")
    same_gbps = same_size_read.bandwidth_gbps if same_size_read is not None and same_size_read.ok else None
    return Placement(
        same_size_read_gbps=same_gbps,
        percent_of_same_size_read=100 * result.bandwidth_gbps / same_gbps if same_gbps and result.bandwidth_gbps else None,
        name=f"{result.name}/{result.variant}" if result.variant else result.name,
        arithmetic_intensity=intensity, achieved_gbps=result.bandwidth_gbps, achieved_tflops=result.tflops,
        attainable=attainable, percent_of_roof=100 * achieved / attainable if attainable else 0.0,
        bound=bound, roof=roof, evidence=result.evidence,
    )
