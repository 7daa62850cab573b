"""`hyperloom bench`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import bench_report


def run(args: argparse.Namespace) -> int:
    result = run_tool("bench", args)
    emit(result, args, bench_report)
    return EXIT_OK if result.ok else EXIT_FAILED_VERDICT


def register(subparsers: argparse._SubParsersAction) -> None:
    add_tool_command(subparsers, "bench", "bench", run)
