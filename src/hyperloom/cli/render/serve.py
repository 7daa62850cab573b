"""Report of serve_sweep: one row per concurrency level, then the knee and the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, table

if TYPE_CHECKING:
    from hyperloom.tools.serve.models import ServeSweepResult


def _ms(stats, pct: str) -> str:
    value = getattr(stats, pct)
    return "-" if value is None else f"{1e3 * value:.1f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _trace_part(result: ServeSweepResult) -> list[str]:
    """Agent traces: where the sessions came from, then per level the prefix reuse and TTFT by turn."""
    workload = result.workload
    if workload.kind != "agent_trace":
        return []
    parts = [f"agent trace: {workload.trace_source}; longest request {workload.longest_request_tokens} tokens; {workload.calibration}"]
    for level in result.levels:
        if level.prefix_cache_hit_fraction is not None:
            parts.append(f"{level.concurrency} streams: {_pct(level.prefix_cache_hit_fraction)} of prompt tokens from the prefix cache, "
                         f"read from {level.prefix_cache_source}")
        if level.turns:
            rows = [(str(t.turn), str(t.requests), f"{_ms(t.ttft_s, 'p50')} / {_ms(t.ttft_s, 'p90')}", _num(t.input_tokens_mean),
                     _num(t.cached_input_tokens_mean)) for t in level.turns]
            parts += [table(["turn", "requests", "TTFT ms p50/p90", "in tokens", "cached tokens"], rows), ""]
    return parts


def sweep_report(result: ServeSweepResult) -> str:
    rows = [
        (str(level.concurrency), f"{level.output_tokens_per_s:.4g}", _num(level.per_request_output_tokens_per_s),
         f"{level.requests_per_s:.3g}", f"{_ms(level.ttft_s, 'p50')} / {_ms(level.ttft_s, 'p90')} / {_ms(level.ttft_s, 'p99')}",
         f"{_ms(level.itl_s, 'p50')} / {_ms(level.itl_s, 'p99')}", f"{_ms(level.e2e_s, 'p50')} / {_ms(level.e2e_s, 'p99')}",
         f"{_num(level.input_tokens_mean)} / {_num(level.output_tokens_mean)}",
         f"{level.requests_ok}" + (f" ({level.requests_failed} failed)" if level.requests_failed else ""))
        for level in result.levels
    ]
    header = ["streams", "output tok/s", "per stream tok/s", "req/s", "TTFT ms p50/p90/p99", "ITL ms p50/p99", "e2e ms p50/p99",
              "in / out tokens", "requests"]
    capacity = result.capacity
    bound = f"{capacity.max_concurrency} streams ({capacity.bound})" if capacity.max_concurrency else "unknown"
    parts = [
        f"server: {result.server.kind} {result.server.version or '(version unknown)'} at {result.base_url}, model {result.model}"
        + (" (started by the tool)" if result.server.started_by_tool else ""),
        f"capacity: {bound}; {capacity.source}",
        *([f"prompts: {result.workload.words_per_prompt} words; sized by {result.workload.calibration}"] if result.workload.words_per_prompt
          else []),
        "", table(header, rows), "",
    ]
    parts += [f"{level.concurrency} streams: {failure}" for level in result.levels for failure in level.failures]
    parts += _trace_part(result)
    if result.best_concurrency is not None:
        parts.append(f"knee: {result.knee_concurrency} streams, {_num(result.knee_output_tokens_per_s)} output tokens/s (the lowest "
                     f"reaching {result.knee_fraction:.0%} of the best, {_num(result.best_output_tokens_per_s)} at "
                     f"{result.best_concurrency} streams)")
    parts += [f"verdict: {result.saturation}: {result.saturation_reason}", f"stopped: {result.stop_reason}: {result.stop_detail}"]
    if result.cached:
        parts.append(f"CACHED: measured at {result.evidence.at.isoformat(timespec='seconds')}; pass --refresh to measure again")
    parts += [f"files: {', '.join(result.files)}", f"evidence: {evidence_line(result.evidence)}"]
    return "\n".join(parts)
