"""`hyperloom verify`: disasm_verify from the command line."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import verify_report


def run(args: argparse.Namespace) -> int:
    result = run_tool("disasm_verify", args)
    emit(result, args, verify_report)
    return EXIT_OK if result.passed else EXIT_FAILED_VERDICT


def register(subparsers: argparse._SubParsersAction) -> None:
    add_tool_command(subparsers, "verify", "disasm_verify", run, aliases=["disasm-verify"])
