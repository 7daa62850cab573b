"""`hyperloom serve sweep`: a concurrency sweep of an OpenAI-compatible server (serve_sweep).

    hyperloom serve sweep --base-url http://127.0.0.1:8080/v1 --max-concurrency 64
    hyperloom serve sweep --base-url http://127.0.0.1:8080/v1 -- llama-server -m model.gguf --port 8080 -np 8
"""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_OK, emit, run_tool
from hyperloom.cli.model_args import add_model_arguments
from hyperloom.cli.render import evidence_line, table
from hyperloom.tools.catalog import tool


def _ms(stats, pct: str) -> str:
    value = getattr(stats, pct)
    return "-" if value is None else f"{1e3 * value:.1f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def sweep_report(result) -> str:
    rows = [
        (str(level.concurrency), f"{level.output_tokens_per_s:.4g}", _num(level.per_request_output_tokens_per_s), f"{level.requests_per_s:.3g}",
         f"{_ms(level.ttft_s, 'p50')} / {_ms(level.ttft_s, 'p90')} / {_ms(level.ttft_s, 'p99')}",
         f"{_ms(level.itl_s, 'p50')} / {_ms(level.itl_s, 'p99')}", f"{_ms(level.e2e_s, 'p50')} / {_ms(level.e2e_s, 'p99')}",
         f"{_num(level.input_tokens_mean)} / {_num(level.output_tokens_mean)}",
         f"{level.requests_ok}" + (f" ({level.requests_failed} failed)" if level.requests_failed else ""))
        for level in result.levels
    ]
    header = ["streams", "output tok/s", "per stream tok/s", "req/s", "TTFT ms p50/p90/p99", "ITL ms p50/p99", "e2e ms p50/p99",
              "in / out tokens", "requests"]
    capacity = result.capacity
    bound = f"{capacity.max_concurrency} streams ({capacity.bound})" if capacity.max_concurrency else "unknown"
    parts = [
        f"server: {result.server.kind} {result.server.version or '(version unknown)'} at {result.base_url}, model {result.model}"
        + (" (started by the tool)" if result.server.started_by_tool else ""),
        f"capacity: {bound}; {capacity.source}", "", table(header, rows), "",
    ]
    parts += [f"{level.concurrency} streams: {failure}" for level in result.levels for failure in level.failures]
    if result.best_concurrency is not None:
        parts.append(f"knee: {result.knee_concurrency} streams, {_num(result.knee_output_tokens_per_s)} output tokens/s (the lowest reaching "
                     f"{result.knee_fraction:.0%} of the best, {_num(result.best_output_tokens_per_s)} at {result.best_concurrency} streams)")
    parts += [f"verdict: {result.saturation}: {result.saturation_reason}", f"stopped: {result.stop_reason}: {result.stop_detail}"]
    if result.cached:
        parts.append(f"CACHED: measured at {result.evidence.at.isoformat(timespec='seconds')}; pass --refresh to measure again")
    parts += [f"files: {', '.join(result.files)}", f"evidence: {evidence_line(result.evidence)}"]
    return "\n".join(parts)


def sweep(args: argparse.Namespace) -> int:
    command = list(args.server_command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    args.server_command = command or None
    emit(run_tool("serve_sweep", args), args, sweep_report)
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="serve_command", required=True)
    entry = tool("serve_sweep")
    text = entry.description.replace("%", "%%")
    sub = commands.add_parser("sweep", help=text.split(". ")[0] + ".", description=text)
    add_model_arguments(sub, entry.request, skip=("server_command",))
    sub.add_argument("--json", action="store_true", help="print the result model as JSON")
    sub.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- SERVER COMMAND",
                     help="a server to start for the sweep and stop afterwards, after --, e.g. -- llama-server -m model.gguf --port 8080 -np 8")
    sub.set_defaults(handler=sweep)
