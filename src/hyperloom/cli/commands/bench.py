"""`hyperloom bench` (a kernel.yaml, gated) and `hyperloom bench-command` (a program's own samples)."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_handler, tool_options
from hyperloom.cli.render import bench_report


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "bench", report_handler("bench", bench_report, verdict="ok"))


def configure_command(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "bench_command", report_handler("bench_command", bench_report, verdict="ok"))
