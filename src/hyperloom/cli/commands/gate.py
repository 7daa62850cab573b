"""`hyperloom gate check|freeze`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import report_command
from hyperloom.cli.render import freeze_report, gate_report


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="gate_command", required=True)
    report_command(commands, "check", "correctness_gate", gate_report, verdict="passed")
    report_command(commands, "freeze", "gate_freeze", freeze_report)
