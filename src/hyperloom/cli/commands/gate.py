"""`hyperloom gate check|freeze`."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, add_tool_command, emit, run_tool
from hyperloom.cli.render import freeze_report, gate_report


def check(args: argparse.Namespace) -> int:
    result = run_tool("correctness_gate", args)
    emit(result, args, gate_report)
    return EXIT_OK if result.passed else EXIT_FAILED_VERDICT


def freeze(args: argparse.Namespace) -> int:
    emit(run_tool("gate_freeze", args), args, freeze_report)
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    gate = subparsers.add_parser("gate", help="correctness gate: compare outputs with references under a declared tolerance")
    commands = gate.add_subparsers(dest="gate_command", required=True)
    add_tool_command(commands, "check", "correctness_gate", check)
    add_tool_command(commands, "freeze", "gate_freeze", freeze)
