"""`hyperloom roofline`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_handler, tool_options
from hyperloom.cli.render import roofline_report


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "roofline", report_handler("roofline", roofline_report, verdict=None))
