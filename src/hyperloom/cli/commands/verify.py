"""`hyperloom verify`: disasm_verify from the command line."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_handler, tool_options
from hyperloom.cli.render import verify_report


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "disasm_verify", report_handler("disasm_verify", verify_report, verdict="passed"))
