"""The roofline picture: measured roofs solid, datasheet roofs dashed, kernels as points (matplotlib)."""

from __future__ import annotations

from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.roofline.models import RooflineResult


def draw(result: RooflineResult, folder: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise HyperloomError("plotting needs matplotlib", "pip install 'hyperloom[plot]', or pass plot=false") from exc
    figure, axes = plt.subplots(figsize=(7, 4.5))
    intensities = [2.0**e for e in range(-6, 11)]
    for ceilings, style, tag in ((result.measured, "-", "MEASURED"), (result.datasheet, "--", "ASSUMED")):
        memory = [c for c in ceilings if c.kind == "memory"]
        compute = [c for c in ceilings if c.kind == "compute"]
        for m in memory:
            for c in compute or [None]:
                roof = [min(i * m.value / 1e3, c.value) if c else i * m.value / 1e3 for i in intensities]
                label = f"{m.name} {m.value:.4g} GB/s" + (f" / {c.name} {c.value:.4g} TFLOP/s" if c else "") + f" ({tag})"
                axes.plot(intensities, roof, style, label=label)
    for p in result.placements:
        if p.arithmetic_intensity and p.achieved_tflops:
            axes.plot([p.arithmetic_intensity], [p.achieved_tflops], "o")
            axes.annotate(f"{p.name} {p.percent_of_roof:.0f}%", (p.arithmetic_intensity, p.achieved_tflops), fontsize=8)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (flop/byte)")
    axes.set_ylabel("TFLOP/s")
    axes.set_title(f"roofline: {result.device or result.target}")
    axes.legend(fontsize=6, loc="lower right")
    figure.tight_layout()
    paths = [folder / "roofline.png", folder / "roofline.svg"]
    for path in paths:
        figure.savefig(path)
    plt.close(figure)
    return paths
