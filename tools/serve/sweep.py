"""The sweep's levels and stop rules: 1, 2, 4, ... streams kept in flight, each level warmed up, then measured.

A level is a closed loop: `concurrency` streams, each sending its next request as soon as its last one ended, until
the level's request count (or duration) is spent. A stream works through sessions: one request each for synthetic
prompts, a conversation's turns in order for an agent trace (sustained: its warm-up requests are the loop's first,
without draining, and stream s enters its first session at turn s mod its length, so the streams are at different turns
from the start). Between levels the stop rules decide whether to go on: failures
above max_error_rate, a latency limit broken, the server's queue filling (its own metrics), the server's slots or KV
cache reached, the planned maximum, or the sweep's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2

from hyperloom.tools.serve.capacity import parse_metrics, prefix_cache_counts, queue_and_kv
from hyperloom.tools.serve.client import Record, get_optional, is_context_error, stream_request
from hyperloom.tools.serve.models import Capacity, Level, ServeSweepRequest, StopReason
from hyperloom.tools.serve.stats import summarize

_METRICS_POLL_S = 0.5


def plan_levels(max_concurrency: int, bound: int | None) -> list[int]:
    """Powers of two below max_concurrency, then max_concurrency itself; a server bound below it ends the plan at the bound."""
    levels, c = [], 1
    while c < max_concurrency:
        levels.append(c)
        c *= 2
    levels.append(max_concurrency)
    if bound is not None and bound < max_concurrency:
        levels = [c for c in levels if c < bound] + [bound]
    return levels


def requests_for(request: ServeSweepRequest, concurrency: int) -> tuple[int, int]:
    """(measured requests, warm-up requests) of a level."""
    measured = request.requests_per_level or max(8, 4 * concurrency)
    warmup = concurrency if request.warmup_requests is None else request.warmup_requests
    return measured, warmup


def stop_after(level: Level, request: ServeSweepRequest, capacity: Capacity, last_planned: int,
               elapsed_s: float) -> tuple[StopReason, str] | None:
    """Whether the sweep ends after this level, and why; None to go on."""
    c = level.concurrency
    attempts = level.requests_ok + level.requests_failed
    if level.requests_ok == 0 or level.requests_failed > request.max_error_rate * attempts:
        first = level.failures[0] if level.failures else "no request succeeded"
        timeouts = f", {level.timeouts} timed out" if level.timeouts else ""
        if level.failures and all(is_context_error(f) for f in level.failures):
            return "context_limit", (f"{level.requests_failed} of {attempts} requests at {c} streams were longer than the server's context "
                                     f"per sequence (first: {first}); give each sequence more context (llama-server: a larger -c for its "
                                     "-np slots; vLLM: --max-model-len)")
        return "errors", f"{level.requests_failed} of {attempts} requests failed at {c} streams{timeouts} (first: {first})"
    pct = request.latency_percentile
    for name, limit in (("TTFT", request.max_ttft_s), ("ITL", request.max_itl_s), ("end-to-end latency", request.max_e2e_s)):
        stats = {"TTFT": level.ttft_s, "ITL": level.itl_s, "end-to-end latency": level.e2e_s}[name]
        value = getattr(stats, pct)
        if limit is not None and value is not None and value > limit:
            return "latency_limit", f"{pct} {name} {value:.4g} s > {limit:g} s at {c} streams"
    if level.server_waiting_max:
        return "server_capacity", (f"the server queued up to {level.server_waiting_max:g} requests at {c} streams (its /metrics): it holds "
                                   "fewer at once")
    if c == last_planned:
        if capacity.max_concurrency is not None and c == capacity.max_concurrency and c < request.max_concurrency:
            if capacity.bound == "slots":
                return "server_capacity", f"the server has {capacity.slots} slots ({capacity.source}); more streams would only queue"
            return "kv_capacity", (f"the KV cache holds {capacity.kv_cache_tokens} tokens, {c} requests of this workload "
                                   f"({capacity.source}); more streams would queue or be preempted")
        return "max_concurrency", f"reached max_concurrency {request.max_concurrency}"
    if elapsed_s > request.max_duration_s:
        return "deadline", f"the sweep ran {elapsed_s:.0f} s, past max_duration_s {request.max_duration_s:g} s, after {c} streams"
    return None


@dataclass
class LevelRunner:
    """Runs levels against one client; `session_for(i)` is the i-th session's request bodies (one for a synthetic prompt),
    `on_request` counts progress."""

    client: httpx2.AsyncClient
    api: str
    session_for: Callable[[int], list[dict[str, Any]]]
    timeout_s: float
    metrics_url: str | None
    on_request: Callable[[], None]
    sustained: bool = False
    next_index: int = 0

    async def closed_loop(self, concurrency: int, count: int, duration_s: float | None, max_failures: int, skip: int = 0) -> list[Record]:
        """`count` requests over `concurrency` streams; stops issuing after `duration_s` (each stream sends at least
        one) and cancels what is in flight once failures pass `max_failures`. The first `skip` requests issued are
        sent but not returned (a warm-up that does not drain); a failed turn ends its session."""
        records: list[Record] = []
        issued = failures = 0
        deadline = None if duration_s is None else time.perf_counter() + duration_s

        async def stream(number: int, scope: anyio.CancelScope) -> None:
            nonlocal issued, failures
            sent = 0
            first = True
            while issued < count and (sent == 0 or deadline is None or time.perf_counter() < deadline):
                index = self.next_index
                self.next_index += 1
                bodies = self.session_for(index)
                start = number % len(bodies) if first and self.sustained else 0
                first = False
                for turn in range(start, len(bodies)):
                    if issued >= count or (sent and deadline is not None and time.perf_counter() >= deadline):
                        return
                    order = issued
                    issued += 1
                    sent += 1
                    record = await stream_request(self.client, self.api, bodies[turn], self.timeout_s)
                    record.turn = turn + 1
                    self.on_request()
                    if order >= skip:
                        records.append(record)
                    if not record.ok:
                        failures += order >= skip
                        if failures > max_failures:
                            scope.cancel()
                            return
                        break

        async with anyio.create_task_group() as group:
            for number in range(min(concurrency, count)):
                group.start_soon(stream, number, group.cancel_scope)
        return records

    async def level(self, concurrency: int, measured: int, warmup: int, duration_s: float | None, max_error_rate: float) -> Level:
        """Warm up, then measure one level; the server's queue, KV usage and prefix-cache counters are read meanwhile where it shows
        them."""
        max_failures = int(max_error_rate * measured)
        if warmup and not self.sustained:
            warm = await self.closed_loop(concurrency, warmup, None, max_failures)
            if sum(1 for r in warm if not r.ok) > max_failures:
                return summarize(concurrency, warm)  # the level failed before measuring: its warm-up is the evidence
        samples: dict[str, float] = {}
        skip = warmup if self.sustained else 0
        before = await self._prefix_counts()
        async with anyio.create_task_group() as group:
            if self.metrics_url is not None:
                group.start_soon(self._sample_metrics, samples)
            records = await self.closed_loop(concurrency, measured + skip, duration_s, max_failures, skip=skip)
            group.cancel_scope.cancel()
        after = await self._prefix_counts()
        metrics_hits = None
        if before is not None and after is not None and after[1] > before[1]:
            # includes the warm-up of a sustained level: counters are server-wide
            metrics_hits = (after[0] - before[0]) / (after[1] - before[1])
        return summarize(concurrency, records, samples.get("waiting"), samples.get("kv"), metrics_hits)

    async def _prefix_counts(self) -> tuple[float, float] | None:
        if self.metrics_url is None:
            return None
        response = await get_optional(self.client, self.metrics_url)
        return prefix_cache_counts(parse_metrics(response.text)) if response is not None else None

    async def _sample_metrics(self, samples: dict[str, float]) -> None:
        assert self.metrics_url is not None
        while True:
            await anyio.sleep(_METRICS_POLL_S)
            response = await get_optional(self.client, self.metrics_url)
            if response is None:
                continue
            waiting, kv = queue_and_kv(parse_metrics(response.text))
            for key, value in (("waiting", waiting), ("kv", kv)):
                if value is not None:
                    samples[key] = max(samples.get(key, value), value)
