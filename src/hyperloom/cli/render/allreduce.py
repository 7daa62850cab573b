"""Reports of allreduce_int6 and of its timing against native bf16 (`hyperloom allreduce run|bench`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, table

if TYPE_CHECKING:
    from hyperloom.tools.allreduce.models import AllreduceBenchResult, AllreduceResult


def allreduce_report(result: AllreduceResult) -> str:
    w = result.wire
    rows = [
        ("result", f"{result.out} ({result.dtype} {result.shape})"),
        ("scheme", f"{result.ranks} rank(s), block {result.block} ({result.blocks} scales), {result.rounding}, "
                   f"{result.partial_sums} (codes ±{result.code_bound}), backend {result.backend}"),
        ("error", f"max abs {result.max_abs_error:.4g}, max rel {'-' if result.max_rel_error is None else f'{result.max_rel_error:.4g}'}, "
                  f"mean abs {result.mean_abs_error:.4g}"),
        ("bound", f"{result.error_bound_abs:.4g} ({'within' if result.within_bound else 'EXCEEDED'}; "
                  f"{100 * result.bound_utilisation:.1f} % used)"),
        ("ranks agree", f"{'bit-identical' if result.bit_identical_across_ranks else 'NOT identical'} (drift {result.cross_rank_drift:g})"),
        ("compression", f"{w.compression_vs_fp16:.3f}x vs fp16, {w.compression_vs_fp32:.3f}x vs fp32 ({w.payload_bytes_per_rank} B per "
                        "rank, scales counted)"),
        ("wire", f"{max(w.wire_bytes_per_rank)} B per rank vs {w.fp16_ring_wire_bytes_per_rank} B for an fp16 ring; steps "
                 f"{' '.join(w.step_formats) or 'none'}"),
    ]
    if result.matches_reference is not None:
        rows.append(("reference", "matches numpy bit for bit" if result.matches_reference else "DIFFERS from numpy"))
    if result.precision_note:
        rows.append(("precision", result.precision_note))
    return "\n".join([table(["what", "value"], rows), f"evidence: {evidence_line(result.evidence)}", result.summary])


def allreduce_bench_report(result: AllreduceBenchResult) -> str:
    rows = [
        (f"{row.size_bytes / 2**20:g} MiB", row.method, f"{row.time_s * 1e3:.3f}", f"{row.algbw_gbps:.3f}",
         f"{row.max_rel_error:.3g}", "-" if row.wire_bytes_per_rank is None else str(row.wire_bytes_per_rank))
        for row in result.rows
    ]
    header = ["size (bf16)", "method", "time ms", "algbw GB/s", "max rel error", "wire B/rank"]
    return "\n".join([table(header, rows), f"evidence: {evidence_line(result.evidence)}", result.summary])
