"""`hyperloom detect` (alias `doctor`): the GPU stack, layer by layer, as a table."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import detect_report


def run(args: argparse.Namespace) -> int:
    emit(run_tool("detect", args), args, detect_report)
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    add_tool_command(subparsers, "detect", "detect", run, aliases=["doctor"])
