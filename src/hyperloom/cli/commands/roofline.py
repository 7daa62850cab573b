"""`hyperloom roofline`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import roofline_report


def register(subparsers: argparse._SubParsersAction) -> None:
    report_command(subparsers, "roofline", "roofline", roofline_report, verdict=None)
