"""`hyperloom allreduce run|bench`: the INT6 all-reduce, and its timing against native bf16."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.cli.render import evidence_line, table
from hyperloom.tools.allreduce.bench import run_allreduce_bench
from hyperloom.tools.allreduce.models import AllreduceBenchRequest, AllreduceBenchResult, AllreduceResult


def run_report(result: AllreduceResult) -> str:
    w = result.wire
    rows = [
        ("result", f"{result.out} ({result.dtype} {result.shape})"),
        ("scheme", f"{result.ranks} rank(s), block {result.block} ({result.blocks} scales), {result.rounding}, "
                   f"{result.partial_sums} (codes ±{result.code_bound}), backend {result.backend}"),
        ("error", f"max abs {result.max_abs_error:.4g}, max rel {'-' if result.max_rel_error is None else f'{result.max_rel_error:.4g}'}, mean abs {result.mean_abs_error:.4g}"),
        ("bound", f"{result.error_bound_abs:.4g} ({'within' if result.within_bound else 'EXCEEDED'}; {100 * result.bound_utilisation:.1f} % used)"),
        ("ranks agree", f"{'bit-identical' if result.bit_identical_across_ranks else 'NOT identical'} (drift {result.cross_rank_drift:g})"),
        ("compression", f"{w.compression_vs_fp16:.3f}x vs fp16, {w.compression_vs_fp32:.3f}x vs fp32 ({w.payload_bytes_per_rank} B per rank, scales counted)"),
        ("wire", f"{max(w.wire_bytes_per_rank)} B per rank vs {w.fp16_ring_wire_bytes_per_rank} B for an fp16 ring; steps {' '.join(w.step_formats) or 'none'}"),
    ]
    if result.matches_reference is not None:
        rows.append(("reference", "matches numpy bit for bit" if result.matches_reference else "DIFFERS from numpy"))
    if result.precision_note:
        rows.append(("precision", result.precision_note))
    return "\n".join([table(["what", "value"], rows), f"evidence: {evidence_line(result.evidence)}", result.summary])


def bench_report(result: AllreduceBenchResult) -> str:
    rows = [
        (f"{row.size_bytes / 2**20:g} MiB", row.method, f"{row.time_s * 1e3:.3f}", f"{row.algbw_gbps:.3f}",
         f"{row.max_rel_error:.3g}", "-" if row.wire_bytes_per_rank is None else str(row.wire_bytes_per_rank))
        for row in result.rows
    ]
    header = ["size (bf16)", "method", "time ms", "algbw GB/s", "max rel error", "wire B/rank"]
    return "\n".join([table(header, rows), f"evidence: {evidence_line(result.evidence)}", result.summary])


def run(args: argparse.Namespace) -> int:
    result = run_tool("allreduce_int6", args)
    emit(result, args, run_report)
    return EXIT_OK if result.within_bound and result.bit_identical_across_ranks and result.matches_reference is not False else EXIT_FAILED_VERDICT


def bench(args: argparse.Namespace) -> int:
    emit(run_allreduce_bench(model_from_args(AllreduceBenchRequest, args)), args, bench_report)
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="allreduce_command", required=True)
    add_tool_command(commands, "run", "allreduce_int6", run)
    timing = commands.add_parser("bench", help="time allreduce_int6 against the backend's native bf16 all-reduce, 1 MiB to 1 GiB", description=run_allreduce_bench.__doc__)
    add_model_arguments(timing, AllreduceBenchRequest)
    timing.add_argument("--json", action="store_true", help="print the result model as JSON")
    timing.set_defaults(handler=bench)
