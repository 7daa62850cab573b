"""Summary statistics of timing samples: what a reader needs to trust a median."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field

from hyperloom.tools.runtime.sampling import median_ci_halfwidth


class SampleStats(BaseModel):
    n: int
    median_s: float
    min_s: float
    p10_s: float
    p90_s: float
    mean_s: float
    std_s: float
    cv: float = Field(description="Coefficient of variation, std / mean.")
    outliers: int = Field(description="Samples outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR].")
    median_ci95_rel: float = Field(description="Half-width of the median's 95 % confidence interval, as a fraction of the median.")


def summarize(samples: list[float]) -> SampleStats:
    if not samples:
        raise ValueError("no samples to summarize")
    x = np.asarray(samples, dtype=np.float64)
    q1, q3 = np.percentile(x, [25, 75])
    fence = 1.5 * (q3 - q1)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return SampleStats(
        n=int(x.size),
        median_s=float(np.median(x)),
        min_s=float(x.min()),
        p10_s=float(np.percentile(x, 10)),
        p90_s=float(np.percentile(x, 90)),
        mean_s=mean,
        std_s=std,
        cv=std / mean if mean > 0 else 0.0,
        outliers=int(np.count_nonzero((x < q1 - fence) | (x > q3 + fence))),
        median_ci95_rel=min(median_ci_halfwidth(list(x)), 1e9),
    )


def sign_test_p(wins: int, pairs: int) -> float:
    """One-sided p-value of at least `wins` of `pairs` under a fair coin."""
    return sum(math.comb(pairs, k) for k in range(wins, pairs + 1)) / 2**pairs
