"""The throughput knee and the saturation verdict of a concurrency sweep.

Knee: the lowest concurrency whose aggregate output tokens/s reaches `fraction` (default 0.9) of the best level's.
Past it, more streams buy at most the last 10 % of throughput while every stream's latency keeps growing, so it is
the serving concurrency to pick when latency matters; the best level is the one to pick when only throughput does.

Saturation: compare the last level with the one before it. Throughput is still rising (not saturated) when
    T_last >= T_prev * (1 + rise_threshold * log2(C_last / C_prev)),
that is, at least `rise_threshold` (default 10 %) more per doubling of concurrency; otherwise it has flattened or
fallen (saturated). With one level there is nothing to compare (undetermined). A sweep stopped by the server's slots
while throughput was still rising is "not saturated": the bound, not the hardware, ended it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Knee:
    knee_concurrency: int | None
    knee_tokens_per_s: float | None
    best_concurrency: int | None
    best_tokens_per_s: float | None
    speedup_vs_one_stream: float | None


def find_knee(points: list[tuple[int, float]], fraction: float) -> Knee:
    """`points` are (concurrency, aggregate output tokens/s) of the levels that measured something, in sweep order."""
    usable = sorted((c, t) for c, t in points if t > 0)
    if not usable:
        return Knee(None, None, None, None, None)
    best_c, best_t = max(usable, key=lambda p: (p[1], -p[0]))
    knee_c, knee_t = next((c, t) for c, t in usable if t >= fraction * best_t)
    one = next((t for c, t in usable if c == 1), None)
    return Knee(knee_c, knee_t, best_c, best_t, best_t / one if one else None)


def saturation(points: list[tuple[int, float]], rise_threshold: float) -> tuple[str, str]:
    """('not_saturated' | 'saturated' | 'undetermined', the reason in words) from the last two levels."""
    usable = sorted((c, t) for c, t in points if t > 0)
    if len(usable) < 2:
        return "undetermined", f"{len(usable)} level(s) with throughput: nothing to compare"
    (c0, t0), (c1, t1) = usable[-2], usable[-1]
    needed = 1 + rise_threshold * math.log2(c1 / c0)
    gain = t1 / t0
    words = (f"{c0} -> {c1} streams: {t0:.4g} -> {t1:.4g} output tokens/s ({100 * (gain - 1):+.1f} %, rising needs "
             f"{100 * (needed - 1):+.1f} %)")
    if gain >= needed:
        return "not_saturated", f"still rising when the sweep stopped: {words}"
    return "saturated", f"flattened: {words}"
