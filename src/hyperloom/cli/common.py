"""What every subcommand shares: exit codes, running a catalog tool from parsed options, printing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK  # noqa: F401  (re-exported)
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.tools.catalog import tool

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hyperloom.core.progress import ProgressFn


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
    from hyperloom.core.workspace import Workspace

    entry = tool(name)
    return entry.run(model_from_args(entry.request, args), Workspace.from_env(), progress_printer())


def tool_options(parser: argparse.ArgumentParser, tool_name: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """Give a subcommand the tool's description, one option per request field, and --json."""
    entry = tool(tool_name)
    parser.description = entry.description.replace("%", "%%")  # argparse formats help with %
    add_model_arguments(parser, entry.request)
    parser.add_argument("--json", action="store_true", help="print the result model as JSON")
    parser.set_defaults(handler=handler)
    return parser


def add_tool_command(
    subparsers: argparse._SubParsersAction,
    command: str,
    tool_name: str,
    handler: Callable[[argparse.Namespace], int],
    **parser_options: object,
) -> argparse.ArgumentParser:
    """A nested subcommand (`gate check`) whose options are the tool's request fields, plus --json."""
    text = tool(tool_name).description.replace("%", "%%")
    parser = subparsers.add_parser(command, help=text.split(". ")[0] + ".", **parser_options)
    return tool_options(parser, tool_name, handler)


def emit(result: BaseModel, args: argparse.Namespace, render: Callable[[BaseModel], str]) -> None:
    print(result.model_dump_json(indent=2) if args.json else render(result))


def report_handler(tool_name: str, render: Callable[[BaseModel], str], verdict: str | None = None) -> Callable[[argparse.Namespace], int]:
    """Run one catalog tool and print its report (or --json); exit 1 when the result's `verdict` field
    is false (a failed gate, build or proof), 0 otherwise."""

    def run(args: argparse.Namespace) -> int:
        result = run_tool(tool_name, args)
        emit(result, args, render)
        return EXIT_OK if verdict is None or getattr(result, verdict) else EXIT_FAILED_VERDICT

    return run


def report_command(
    subparsers: argparse._SubParsersAction,
    command: str,
    tool_name: str,
    render: Callable[[BaseModel], str],
    verdict: str | None = None,
    **parser_options: object,
) -> argparse.ArgumentParser:
    """A nested subcommand that runs one catalog tool and prints its report (see report_handler)."""
    return add_tool_command(subparsers, command, tool_name, report_handler(tool_name, render, verdict), **parser_options)
