"""`hyperloom roofline`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import roofline_report


def run(args: argparse.Namespace) -> int:
    emit(run_tool("roofline", args), args, roofline_report)
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    add_tool_command(subparsers, "roofline", "roofline", run)
