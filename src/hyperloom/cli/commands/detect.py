"""`hyperloom detect` (alias `doctor`): the GPU stack, layer by layer, as a table."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import detect_report


def register(subparsers: argparse._SubParsersAction) -> None:
    report_command(subparsers, "detect", "detect", detect_report, verdict=None, aliases=["doctor"])
