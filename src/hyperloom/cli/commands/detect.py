"""`hyperloom detect` (alias `doctor`): the GPU stack, layer by layer, as a table."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_handler, tool_options
from hyperloom.cli.render import detect_report


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "detect", report_handler("detect", detect_report, verdict=None))
