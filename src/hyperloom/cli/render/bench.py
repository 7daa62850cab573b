"""Report of bench and bench_command: the gate, then the timing statistics and rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, num, table
from hyperloom.core.figures import significant

if TYPE_CHECKING:
    from hyperloom.tools.bench.models import BenchResult


def bench_report(result: BenchResult) -> str:
    parts = [f"{result.name}/{result.variant} on {result.device or result.target} ({result.backend}), shape {result.shape}"]
    for v in result.gate:
        parts.append(f"  gate {v.input_set}: {'PASS' if v.passed else 'FAIL'}  {v.summary}")
    rows = []
    for label, s in (("kernel", result.kernel), ("wall", result.wall)):
        if s is not None:
            rows.append((label, f"{s.median_s * 1e6:.3f}", f"{s.min_s * 1e6:.3f}", f"{s.p10_s * 1e6:.3f}", f"{s.p90_s * 1e6:.3f}",
                         f"{s.cv:.2%}", f"{s.median_ci95_rel:.2%}", str(s.n), str(s.outliers)))
    if rows:
        parts += ["", table(["time (us)", "median", "min", "p10", "p90", "CV", "CI95", "n", "outliers"], rows)]
    if result.bandwidth_gbps is not None:
        parts.append(f"bandwidth: {significant(result.bandwidth_gbps)} GB/s ({result.bytes_moved:,} bytes per launch)")
    if result.tflops is not None:
        parts.append(f"compute: {significant(result.tflops)} TFLOP/s ({result.flops:,} ops per launch)")
    if result.kernel_to_wall is not None:
        parts.append(f"kernel/wall: {result.kernel_to_wall:.3f}; cache flushed with {result.flush_bytes / 2**20:.0f} MiB (cache "
                     f"{result.cache_bytes / 2**20:.0f} MiB)")
    for label, state in (("before", result.state_before), ("after", result.state_after)):
        if state is not None:
            parts.append(f"{label}: SM {num(state.sm_clock_mhz)} MHz, memory {num(state.memory_clock_mhz)} MHz, "
                         f"{num(state.power_w)} W, {num(state.temperature_c)} C {state.note}".rstrip())
    if result.artifacts:
        parts.append(f"artifacts: {result.artifacts}")
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)
