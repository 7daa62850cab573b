"""When to stop timing: warm up by time, then sample until the median is known to within a target."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from hyperloom.tools.runtime.models import Timing

Z95 = 1.959963984540054


def median_ci_halfwidth(samples: list[float]) -> float:
    """Relative half-width of a distribution-free 95 % confidence interval for the median
    (order statistics n/2 ∓ 1.96·√n/2); infinite below 6 samples."""
    n = len(samples)
    if n < 6:
        return math.inf
    ordered = sorted(samples)
    low = max(0, int(math.floor(n / 2 - Z95 * math.sqrt(n) / 2)))
    high = min(n - 1, int(math.ceil(n / 2 + Z95 * math.sqrt(n) / 2)))
    median = ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])
    return (ordered[high] - ordered[low]) / (2 * median) if median > 0 else math.inf


def sample(one_rep: Callable[[], tuple[float, float]], timing: Timing) -> tuple[list[float], list[float], int]:
    """Run `one_rep` (returning kernel and wall seconds): warm-up reps are dropped, then reps are
    kept until the median's CI is within `target_ci`, or `max_reps`, or `max_time_s`."""
    start = time.perf_counter()
    warmup = 0
    while warmup < 3 or time.perf_counter() - start < timing.warmup_s:
        one_rep()
        warmup += 1
    kernel: list[float] = []
    wall: list[float] = []
    sampling_started = time.perf_counter()
    while len(kernel) < timing.max_reps:
        k, w = one_rep()
        kernel.append(k)
        wall.append(w)
        n = len(kernel)
        if n >= timing.min_reps and (n % 10 == 0) and median_ci_halfwidth(kernel) <= timing.target_ci:
            break
        if time.perf_counter() - sampling_started > timing.max_time_s and n >= 6:
            break
    return kernel, wall, warmup
