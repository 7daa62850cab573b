"""Reports of the workload tools: what was frozen, and the end-to-end A/B of each candidate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import hanging

if TYPE_CHECKING:
    from hyperloom.tools.workload.models import IntegrateResult, OutputTolerance, WorkloadBenchResult, WorkloadFreezeResult


def freeze_report(result: WorkloadFreezeResult) -> str:
    lines = [result.summary, f"  session: {result.name} ({result.folder}), {result.vendor}"]
    lines += [f"  {o.name}: {o.shape} {o.original_dtype}, {_rule(o.tolerance)}, two runs {o.spread:.3g} apart" for o in result.outputs]
    if result.declared_knobs:
        lines.append("  knobs: " + ", ".join(f"{k}={'|'.join(v) if v else '*'}" for k, v in result.declared_knobs.items()))
    return "\n".join(lines)


def _rule(tolerance: OutputTolerance) -> str:
    """An output's tolerance as a reader checks it: the twin rule with the baseline's measured errors, or the declared one."""
    rule = tolerance.derived
    if rule is None:
        return f"atol {tolerance.atol:g} rtol {tolerance.rtol:g} match {tolerance.match:g}"
    errors = ", ".join(f"{m} {v:.3g}" for m, v in rule.baseline_error.items())
    extra = f" (near-tie atol {tolerance.atol:.3g})" if tolerance.atol else ""
    return f"twin rule: <= {rule.k:g}x the baseline's error against its {rule.twin_dtype} twin ({errors}; floor {rule.floor:.3g}){extra}"


def bench_report(result: WorkloadBenchResult) -> str:
    lines = [result.summary, f"  report: {result.report_md}"]
    for c in result.candidates:
        speed = f" {c.speedup:.3g}x" if c.speedup else ""
        lines.append(hanging(f"  {' + '.join(c.levers)}: {c.verdict}{speed}: {c.reason}", 4))
    lines += [hanging(f"  warning: {w}", 4) for w in result.warnings]
    return "\n".join(lines)


def integrate_report(result: IntegrateResult) -> str:
    lines = [result.summary, f"  overrides: {result.overrides} (lever overrides:{result.overrides})"]
    if result.calls_per_step is not None:
        wrapper = f", the wrapper {result.wrapper_us_per_call:.3f} us a call" if result.wrapper_us_per_call is not None else ""
        share = f" ({result.wrapper_share:.3%} of a step)" if result.wrapper_share is not None else ""
        lines.append(f"  {result.calls_per_step} call(s) a step{wrapper}{share}")
    lines.append(f"  report: {result.bench.report_md}")
    return "\n".join(lines)
