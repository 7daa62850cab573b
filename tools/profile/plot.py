"""Two pictures: the top kernels by time, and the hotspots on the roofline (matplotlib, optional)."""

from __future__ import annotations

from pathlib import Path

from hyperloom.tools.profile.classify import short_name
from hyperloom.tools.profile.models import ProfileResult

CLASS_COLOURS = {"gemm": "tab:blue", "attention": "tab:purple", "normalization": "tab:green", "elementwise": "tab:orange",
                 "reduction": "tab:olive", "communication": "tab:red", "memory copy": "tab:gray", "other": "tab:brown"}
BARS = 15


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def draw(result: ProfileResult, folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    paths = []
    kernels = result.kernels[:BARS][::-1]
    figure, axes = plt.subplots(figsize=(9, 0.35 * max(len(kernels), 3) + 1.2))
    rows = range(len(kernels))  # positions, not names: two kernels may share a shortened name
    axes.barh(rows, [k.total_s * 1e3 for k in kernels], color=[CLASS_COLOURS[k.kernel_class] for k in kernels])
    axes.set_yticks(rows, [short_name(k.name, 60) for k in kernels])
    for i, k in enumerate(kernels):
        axes.annotate(f" {k.percent_of_device_time:.1f} %", (k.total_s * 1e3, i), va="center", fontsize=7)
    axes.set_xlabel("total time (ms)")
    axes.tick_params(axis="y", labelsize=6)
    axes.set_title(f"top kernels by time: {result.device} ({result.evidence.tag.value})", fontsize=9)
    width_in, height_in = figure.get_size_inches()
    label_in = max((len(t.get_text()) for t in axes.get_yticklabels()), default=10) * 6 * 0.55 / 72  # 6 pt labels
    # tight_layout costs 0.3 s
    figure.subplots_adjust(left=min(0.6, 0.03 + label_in / width_in), right=0.93, top=1 - 0.35 / height_in, bottom=0.55 / height_in)
    paths += _save(figure, folder, "top_kernels")
    plt.close(figure)

    placed = [h for h in result.hotspots if h.arithmetic_intensity and h.achieved_tflops]
    figure, axes = plt.subplots(figsize=(7.5, 5))
    memory = [c for c in result.roofs if c.kind == "memory"]
    compute = [c for c in result.roofs if c.kind == "compute"]
    lo = min([h.arithmetic_intensity for h in placed] + [0.05]) / 2
    hi = max([h.arithmetic_intensity for h in placed] + [512]) * 2
    xs = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    best_memory = max(memory, key=lambda c: c.value, default=None)
    for c in compute or [None]:
        if best_memory is None and c is None:
            break
        ys = [min(x * best_memory.value / 1e3 if best_memory else float("inf"), c.value if c else float("inf")) for x in xs]
        tag = (c or best_memory).evidence.tag.value
        name = f"{best_memory.name if best_memory else ''}{' / ' if best_memory and c else ''}{c.name if c else ''}"
        axes.plot(xs, ys, "-" if tag == "MEASURED" else "--", label=f"{name} ({tag})", linewidth=1)
    for h in placed:
        axes.plot([h.arithmetic_intensity], [h.achieved_tflops], "o", color=CLASS_COLOURS[h.kernel_class], markersize=5)
        axes.annotate(f"#{h.rank}", (h.arithmetic_intensity, h.achieved_tflops), fontsize=7, xytext=(3, 3), textcoords="offset points")
    axes.set_xscale("log")
    axes.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")  # log axes label with mathtext by default: slow to lay out
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("arithmetic intensity (flop/byte)")
    axes.set_ylabel("achieved TFLOP/s")
    axes.set_title(f"hotspots on the roofline: {result.device}", fontsize=9)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=6, loc="lower right")
    if not placed:
        axes.text(0.5, 0.5, "no hotspot with both bytes and flops", transform=axes.transAxes, ha="center")
    figure.subplots_adjust(left=0.12, right=0.97, top=0.93, bottom=0.11)
    paths += _save(figure, folder, "hotspots_roofline")
    plt.close(figure)
    return paths


def _save(figure: object, folder: Path, stem: str) -> list[Path]:
    paths = [folder / f"{stem}.png", folder / f"{stem}.svg"]
    for path in paths:
        tmp = path.with_name(f".{path.name}.tmp")
        figure.savefig(tmp, format=path.suffix[1:])
        tmp.replace(path)  # atomic: a reader never sees half a picture
    return paths
