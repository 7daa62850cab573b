"""The sweep picture: aggregate output tokens/s and latency percentiles against concurrency (matplotlib)."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.models import ServeSweepResult


TITLE_CHARS = 80  # a 7-inch figure holds about 95 characters of 9-point text: wrap before that


def title(result: ServeSweepResult) -> str:
    """The plot's title, wrapped so that no line is cut off: the server, the model's file name, the verdict and the stop reason."""
    model = result.model.rsplit("/", 1)[-1]
    workload = "agent trace" if result.workload.kind == "agent_trace" else f"{result.workload.input_tokens_requested or 'file'} in"
    text = (f"{result.server.kind} {result.server.version or ''} serving {model} ({workload}, {result.workload.output_tokens_requested} "
            f"out): {result.saturation.replace('_', ' ')}, stopped by {result.stop_reason}").replace("  ", " ")
    return "\n".join(textwrap.wrap(text, TITLE_CHARS, break_long_words=True))


def _turns(axis, levels: list) -> None:
    """Agent traces: TTFT p50 by turn of a session, one line per level, with the prefix share the server reused."""
    for level in levels:
        turns = [t for t in level.turns if t.ttft_s.p50 is not None]
        hit = f", {level.prefix_cache_hit_fraction:.0%} of prompt tokens cached" if level.prefix_cache_hit_fraction is not None else ""
        axis.plot([t.turn for t in turns], [t.ttft_s.p50 for t in turns], "o-", label=f"{level.concurrency} streams{hit}")
    axis.set_yscale("log")
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.set_xlabel("turn of a session")
    axis.set_ylabel("TTFT p50 (s)")
    axis.legend(fontsize=7)
    axis.grid(True, alpha=0.3)


def draw(result: ServeSweepResult, folder: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise HyperloomError("plotting needs matplotlib", "pip install 'hyperloom[plot]', or pass plot=false") from exc
    levels = [level for level in result.levels if level.requests_ok]
    streams = [level.concurrency for level in levels]
    by_turn = [level for level in levels if level.turns]
    figure, axes = plt.subplots(3 if by_turn else 2, 1, figsize=(7, 10 if by_turn else 7))
    top, bottom = axes[0], axes[1]
    bottom.sharex(top)
    top.plot(streams, [level.output_tokens_per_s for level in levels], "o-", label="aggregate output tokens/s")
    if result.knee_concurrency is not None:
        top.axvline(result.knee_concurrency, linestyle="--", color="gray",
                    label=f"knee: {result.knee_concurrency} streams ({result.knee_fraction:.0%} of best)")
    top.set_ylabel("output tokens/s (all streams)")
    top.set_title(title(result), fontsize=9)
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
    if by_turn:
        _turns(axes[2], by_turn)
    figure.text(0.01, 0.005, f"{result.evidence.tag.value} on {result.evidence.device} at {result.evidence.at:%Y-%m-%d %H:%M} UTC",
                fontsize=6)
    figure.tight_layout()
    paths = [folder / "serve_sweep.png", folder / "serve_sweep.svg"]
    for path in paths:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=path.suffix[1:])
        write_bytes_atomic(path, buffer.getvalue())
    plt.close(figure)
    return paths
