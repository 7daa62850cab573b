"""`hyperloom profile [options] [WORKLOAD [ARG ...]]`: the workload and its arguments come last, as on a command line."""

from __future__ import annotations

import argparse

from hyperloom.cli.common import EXIT_OK, emit, progress_printer
from hyperloom.cli.model_args import add_model_arguments
from hyperloom.tools.catalog import tool


def run(args: argparse.Namespace) -> int:
    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.profile.report import render

    entry = tool("profile")
    values = {name: getattr(args, name) for name in entry.request.model_fields if getattr(args, name, None) is not None}
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if command:
        values["workload"], values["args"] = command[0], command[1:]
    result = entry.run(entry.request.model_validate(values), Workspace.from_env(), progress_printer())
    emit(result, args, render)
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    entry = tool("profile")
    parser.description = entry.description.replace("%", "%%")
    add_model_arguments(parser, entry.request, skip=("workload", "args"))
    parser.add_argument("--json", action="store_true", help="print the result model as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="WORKLOAD [ARG ...]",
                        help="script.py or module:function to run under the profiler, then its arguments (or give --trace)")
    parser.set_defaults(handler=run)
