"""The sweep picture: aggregate output tokens/s and latency percentiles against concurrency (matplotlib)."""

from __future__ import annotations

import io
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.models import ServeSweepResult


def draw(result: ServeSweepResult, folder: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise HyperloomError("plotting needs matplotlib", "pip install 'hyperloom[plot]', or pass plot=false") from exc
    levels = [level for level in result.levels if level.requests_ok]
    streams = [level.concurrency for level in levels]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    top.plot(streams, [level.output_tokens_per_s for level in levels], "o-", label="aggregate output tokens/s")
    if result.knee_concurrency is not None:
        top.axvline(result.knee_concurrency, linestyle="--", color="gray",
                    label=f"knee: {result.knee_concurrency} streams ({result.knee_fraction:.0%} of best)")
    top.set_ylabel("output tokens/s (all streams)")
    top.set_title(f"{result.server.kind} {result.server.version or ''} serving {result.model}: {result.saturation} "
                  f"(stop: {result.stop_reason})", fontsize=9)
    top.legend(fontsize=8)
    top.grid(True, alpha=0.3)
    for (name, style), color in zip((("ttft_s", "o"), ("itl_s", "s"), ("e2e_s", "^")), ("tab:blue", "tab:green", "tab:purple")):
        for pct, line in (("p50", "-"), ("p99", ":")):
            values = [getattr(getattr(level, name), pct) for level in levels]
            if any(v is not None for v in values):
                bottom.plot(streams, [v if v is not None else float("nan") for v in values], style + line, color=color,
                            label=f"{name.removesuffix('_s').upper()} {pct}")
    bottom.set_xscale("log", base=2)
    bottom.set_xticks(streams, [str(c) for c in streams])
    bottom.set_yscale("log")
    bottom.set_xlabel("concurrent streams")
    bottom.set_ylabel("latency (s)")
    bottom.legend(fontsize=7, ncol=3)
    bottom.grid(True, alpha=0.3)
    figure.text(0.01, 0.005, f"{result.evidence.tag.value} on {result.evidence.device} at {result.evidence.at:%Y-%m-%d %H:%M} UTC", fontsize=6)
    figure.tight_layout()
    paths = [folder / "serve_sweep.png", folder / "serve_sweep.svg"]
    for path in paths:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=path.suffix[1:])
        write_bytes_atomic(path, buffer.getvalue())
    plt.close(figure)
    return paths
