"""`hyperloom compile`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import compile_report


def register(subparsers: argparse._SubParsersAction) -> None:
    report_command(subparsers, "compile", "compile_kernel", compile_report, verdict="ok")
