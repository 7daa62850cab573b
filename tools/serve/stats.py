"""One level's figures from its request records: aggregate and per-request throughput, latency percentiles, failures."""

from __future__ import annotations

import statistics

import numpy as np

from hyperloom.tools.serve.client import Record
from hyperloom.tools.serve.models import Level, Percentiles, TurnStats

MAX_FAILURES_SHOWN = 5


def percentiles(values: list[float]) -> Percentiles:
    """p50/p90/p99 by linear interpolation between order statistics (numpy's default, as vllm bench serve reports)."""
    if not values:
        return Percentiles(p50=None, p90=None, p99=None, mean=None, count=0)
    p50, p90, p99 = (float(v) for v in np.percentile(values, [50, 90, 99]))
    return Percentiles(p50=p50, p90=p90, p99=p99, mean=float(statistics.fmean(values)), count=len(values))


def _mean(values: list[int]) -> float | None:
    return float(statistics.fmean(values)) if values else None


def prefix_reuse(records: list[Record], metrics_hit_fraction: float | None) -> tuple[float | None, float | None, str | None]:
    """(cached prompt tokens per request, cached / all prompt tokens, where read): the responses' counts, else vLLM's counters."""
    both = [(r.cached_tokens, r.input_tokens) for r in records if r.cached_tokens is not None and r.input_tokens]
    if both:
        cached, total = sum(c for c, _ in both), sum(t for _, t in both)
        return cached / len(both), cached / total, ("the responses: usage.prompt_tokens_details.cached_tokens, else llama.cpp's "
                                                    "timings.cache_n")
    if metrics_hit_fraction is not None:
        return None, metrics_hit_fraction, "vLLM /metrics: prefix_cache_hits_total / prefix_cache_queries_total over the level"
    return None, None, None


def per_turn(records: list[Record]) -> list[TurnStats]:
    """TTFT and prefix reuse by turn position, for sessions of more than one turn."""
    if all(r.turn <= 1 for r in records):
        return []
    out = []
    for turn in sorted({r.turn for r in records}):
        these = [r for r in records if r.turn == turn]
        out.append(TurnStats(turn=turn, requests=len(these), ttft_s=percentiles([r.ttft_s for r in these if r.ttft_s is not None]),
                             input_tokens_mean=_mean([r.input_tokens for r in these if r.input_tokens is not None]),
                             cached_input_tokens_mean=_mean([r.cached_tokens for r in these if r.cached_tokens is not None])))
    return out


def summarize(concurrency: int, records: list[Record], waiting_max: float | None = None, kv_usage_max: float | None = None,
              metrics_hit_fraction: float | None = None) -> Level:
    good = [r for r in records if r.ok]
    cached_mean, hit_fraction, hit_source = prefix_reuse(good, metrics_hit_fraction)
    bad = [(i, r) for i, r in enumerate(records) if not r.ok]
    duration_s = (max(r.finished_at for r in records) - min(r.started_at for r in records)) if records else 0.0
    output = sum(r.output_tokens or 0 for r in good)
    decode_rates = [(r.output_tokens - 1) / (r.e2e_s - r.ttft_s) for r in good
                    if r.output_tokens and r.output_tokens > 1 and r.e2e_s is not None and r.ttft_s is not None and r.e2e_s > r.ttft_s]
    inputs = [r.input_tokens for r in good if r.input_tokens is not None]
    outputs = [r.output_tokens for r in good if r.output_tokens is not None]
    return Level(
        concurrency=concurrency,
        requests_ok=len(good),
        requests_failed=len(bad),
        timeouts=sum(1 for _, r in bad if r.timeout),
        failures=[f"request {i}: {r.error}" for i, r in bad[:MAX_FAILURES_SHOWN]],
        duration_s=duration_s,
        output_tokens_per_s=output / duration_s if duration_s > 0 else 0.0,
        requests_per_s=len(good) / duration_s if duration_s > 0 else 0.0,
        per_request_output_tokens_per_s=float(statistics.median(decode_rates)) if decode_rates else None,
        ttft_s=percentiles([r.ttft_s for r in good if r.ttft_s is not None]),
        itl_s=percentiles([gap for r in good for gap in r.itl_s]),
        e2e_s=percentiles([r.e2e_s for r in good if r.e2e_s is not None]),
        input_tokens_mean=float(statistics.fmean(inputs)) if inputs else None,
        output_tokens_mean=float(statistics.fmean(outputs)) if outputs else None,
        output_tokens_min=min(outputs) if outputs else None,
        server_waiting_max=waiting_max,
        kv_cache_usage_max=kv_usage_max,
        cached_input_tokens_mean=cached_mean,
        prefix_cache_hit_fraction=hit_fraction,
        prefix_cache_source=hit_source,
        turns=per_turn(good),
    )
