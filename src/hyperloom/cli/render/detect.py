"""Report of detect: the stack bottom-up, then the GPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, report_width, table

if TYPE_CHECKING:
    from hyperloom.tools.detect.models import DetectResult


def detect_report(result: DetectResult, width: int | None = None) -> str:
    """The layers bottom-up, one row per finding (its fix on a line of its own, wrapped to the terminal's width),
    then the GPUs with their datasheet peaks tagged ASSUMED."""
    rows = [(f.layer, f.status.upper(), f.check, f.summary + (f"\n→ fix: {f.fix}" if f.fix else "")) for f in result.findings]
    from hyperloom.tools.detect.models import LAYERS

    rows += [(p.layer, "OK", p.check, p.summary) for p in result.passed]
    rows.sort(key=lambda row: LAYERS.index(row[0]))  # stable: bottom-up, as detect orders its checks
    parts = [table(["layer", "status", "check", "finding"], rows, width=width or report_width()), ""]
    parts.append("layers: " + ", ".join(f"{layer} {status}" for layer, status in result.layers.items()))
    for gpu in result.gpus:
        shape = ", ".join(
            f"{label} {value}" for label, value in (
                ("CUs/SMs", gpu.compute_units), ("wave", gpu.wave_size), ("LDS KiB", gpu.lds_kib),
                ("VRAM GiB", f"{gpu.vram_bytes / 2**30:.1f}" if gpu.vram_bytes else None), ("cc", gpu.compute_capability),
            ) if value is not None
        )
        parts.append(f"GPU {gpu.index}: {gpu.name} [{gpu.target or '?'}] {shape}".rstrip())
        if gpu.part_compute_units:
            parts.append(f"  note: this node holds {gpu.compute_units} of the {gpu.part}'s {gpu.part_compute_units} CUs (a partition); "
                         "peaks are the whole part's")
        if (p := result.parts.get(gpu.part or "")) is not None:
            parts.append(
                f"  peaks (ASSUMED, {p.source}): FP32 {p.fp32_tflops:g} TFLOP/s, FP16 {p.fp16_tflops:g} TFLOP/s, "
                f"{p.memory_gb:g} GB at {p.memory_bandwidth_gbps:g} GB/s"
            )
    if result.more_gpus:
        parts.append(f"... and {result.more_gpus} more GPU(s) like these (--detail lists every one)")
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)
