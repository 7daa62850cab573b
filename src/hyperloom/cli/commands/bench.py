"""`hyperloom bench`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import bench_report


def register(subparsers: argparse._SubParsersAction) -> None:
    report_command(subparsers, "bench", "bench", bench_report, verdict="ok")
