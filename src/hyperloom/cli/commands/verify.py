"""`hyperloom verify`: disasm_verify from the command line."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import verify_report


def register(subparsers: argparse._SubParsersAction) -> None:
    report_command(subparsers, "verify", "disasm_verify", verify_report, verdict="passed", aliases=["disasm-verify"])
