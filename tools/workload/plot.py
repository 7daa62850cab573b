"""The speedup picture of workload_bench and optimize: one bar per candidate, its speedup (the median of its pairs'
ratios) with the 95 % interval, 1.0 marked; matplotlib when installed, else no picture."""

from __future__ import annotations

import io
from pathlib import Path
from typing import NamedTuple

from hyperloom.core.atomic import write_bytes_atomic


NO_PLOT = ("no speedup.png: matplotlib is not installed (pip install 'hyperloom[plot]' draws it; the figures are in report.md and "
           "result.json)")


def can_plot() -> bool:
    """Whether matplotlib can be imported here (no picture otherwise, said: NO_PLOT)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


class Bar(NamedTuple):
    name: str
    speedup: float
    interval: list[float] | None
    color: str


def speedup_bars(bars: list[Bar], title: str, xlabel: str, path: Path, *, top_down: bool = False) -> Path | None:
    if not bars:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axis = plt.subplots(figsize=(8, 0.6 + 0.42 * len(bars)))
    low = [max(0.0, b.speedup - (b.interval or [b.speedup, b.speedup])[0]) for b in bars]  # a figure outside its interval: no bar past it
    high = [max(0.0, (b.interval or [b.speedup, b.speedup])[1] - b.speedup) for b in bars]
    axis.barh([b.name for b in bars], [b.speedup for b in bars], xerr=[low, high], color=[b.color for b in bars])
    if top_down:
        axis.invert_yaxis()
    axis.axvline(1.0, color="black", linewidth=0.8)
    axis.set_xlabel(xlabel)
    axis.set_title(title[:90], fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    write_bytes_atomic(path, buffer.getvalue())
    return path
