"""`hyperloom compile`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_handler, tool_options
from hyperloom.cli.render import compile_report


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "compile_kernel", report_handler("compile_kernel", compile_report, verdict="ok"))
