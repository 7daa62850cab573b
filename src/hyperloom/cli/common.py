"""What every subcommand shares: exit codes, running a catalog tool from parsed options, printing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pydantic import BaseModel

from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.catalog import tool

EXIT_OK, EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR = 0, 1, 2


def progress_printer() -> ProgressFn | None:
    """A one-line progress display on stderr, only when a person is watching."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "" if done < total else "\n"
        print(f"\r{done}/{total} ({100 * done / max(total, 1):.0f} %)", end=end, file=sys.stderr)

    return show


def run_tool(name: str, args: argparse.Namespace) -> BaseModel:
    """Validate the options through the tool's request model and run it, as the MCP server does."""
    entry = tool(name)
    return entry.run(model_from_args(entry.request, args), Workspace.from_env(), progress_printer())


def add_tool_command(
    subparsers: argparse._SubParsersAction,
    command: str,
    tool_name: str,
    handler: Callable[[argparse.Namespace], int],
    **parser_options: object,
) -> argparse.ArgumentParser:
    """A subcommand whose options are the tool's request fields, plus --json."""
    entry = tool(tool_name)
    text = entry.description.replace("%", "%%")  # argparse formats help with %
    parser = subparsers.add_parser(command, help=text.split(". ")[0] + ".", description=text, **parser_options)
    add_model_arguments(parser, entry.request)
    parser.add_argument("--json", action="store_true", help="print the result model as JSON")
    parser.set_defaults(handler=handler)
    return parser


def emit(result: BaseModel, args: argparse.Namespace, render: Callable[[BaseModel], str]) -> None:
    print(result.model_dump_json(indent=2) if args.json else render(result))


def report_command(
    subparsers: argparse._SubParsersAction,
    command: str,
    tool_name: str,
    render: Callable[[BaseModel], str],
    verdict: str | None = None,
    **parser_options: object,
) -> argparse.ArgumentParser:
    """A subcommand that runs one catalog tool and prints its report (or --json); it exits 1 when
    the result's `verdict` field is false (a failed gate, build or proof), 0 otherwise."""

    def run(args: argparse.Namespace) -> int:
        result = run_tool(tool_name, args)
        emit(result, args, render)
        return EXIT_OK if verdict is None or getattr(result, verdict) else EXIT_FAILED_VERDICT

    return add_tool_command(subparsers, command, tool_name, run, **parser_options)
