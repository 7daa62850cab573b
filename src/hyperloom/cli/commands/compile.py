"""`hyperloom compile`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import compile_report


def run(args: argparse.Namespace) -> int:
    result = run_tool("compile_kernel", args)
    emit(result, args, compile_report)
    return EXIT_OK if result.ok else EXIT_FAILED_VERDICT


def register(subparsers: argparse._SubParsersAction) -> None:
    add_tool_command(subparsers, "compile", "compile_kernel", run)
