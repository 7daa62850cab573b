"""Reports of the workload tools: what was frozen, and the end-to-end A/B of each candidate."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperloom.tools.workload.models import WorkloadBenchResult, WorkloadFreezeResult


def freeze_report(result: WorkloadFreezeResult) -> str:
    lines = [result.summary, f"  session: {result.name} ({result.folder}), {result.vendor}"]
    lines += [f"  {o.name}: {o.shape} {o.original_dtype}, atol {o.tolerance.atol:g} rtol {o.tolerance.rtol:g} match {o.tolerance.match:g}, "
              f"two runs {o.spread:.3g} apart" for o in result.outputs]
    if result.declared_knobs:
        lines.append("  knobs: " + ", ".join(f"{k}={'|'.join(v) if v else '*'}" for k, v in result.declared_knobs.items()))
    return "\n".join(lines)


def bench_report(result: WorkloadBenchResult) -> str:
    lines = [result.summary, f"  report: {result.report_md}"]
    for c in result.candidates:
        speed = f" {c.speedup:.3g}x" if c.speedup else ""
        lines.append(f"  {' + '.join(c.levers)}: {c.verdict}{speed}: {c.reason[:200]}")
    lines += [f"  warning: {w}" for w in result.warnings]
    return "\n".join(lines)
