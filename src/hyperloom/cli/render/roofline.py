"""Report of roofline: the ceilings, then the kernels placed on them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, num, table

if TYPE_CHECKING:
    from hyperloom.tools.roofline.models import RooflineResult


def roofline_report(result: RooflineResult) -> str:
    rows = [(c.name, c.kind, f"{c.value:.4g} {c.unit}", c.evidence.tag.value, c.source[:70]) for c in (*result.measured, *result.datasheet)]
    parts = [table(["ceiling", "kind", "value", "tag", "source"], rows)]
    if result.placements:
        placed = [
            (p.name, num(p.arithmetic_intensity), num(p.achieved_gbps), num(p.achieved_tflops), f"{p.percent_of_roof:.1f} %", p.bound,
             p.roof, num(p.same_size_read_gbps), "-" if p.percent_of_same_size_read is None else f"{p.percent_of_same_size_read:.1f} %")
            for p in result.placements
        ]
        header = ["kernel", "flop/byte", "GB/s", "TFLOP/s", "of roof", "bound", "roof", "same-size read GB/s", "of it"]
        parts += ["", table(header, placed)]
    parts += [f"files: {', '.join(result.files)}", f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)
