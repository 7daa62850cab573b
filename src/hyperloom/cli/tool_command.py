"""A catalog tool as a `hyperloom` command: one option per request field, validated through the same model the
MCP server uses, the tool run as the server runs it, its report (or --json) printed, the exit code its verdict."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.tools.catalog import resolve

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hyperloom.core.progress import ProgressFn
    from hyperloom.tools.catalog import ToolDef, Trailing

TRAILING_DEST = "trailing_words"
"""Where argparse leaves the words after a command's options, until they are given to the request's fields."""

Handler = Callable[["ToolDef", argparse.Namespace], int]


def configure(parser: argparse.ArgumentParser, entry: ToolDef) -> None:
    """Give the command its options (one per request field, unless the entry names its own) and its handler."""
    cli = entry.cli
    assert cli is not None, f"{entry.name} has no CLI command"
    if cli.options:
        resolve(cli.options)(parser, entry)
    else:
        add_model_arguments(parser, entry.request, skip=cli.trailing.fields if cli.trailing else ())
        add_json_option(parser)
        if cli.trailing:
            parser.add_argument(TRAILING_DEST, nargs=argparse.REMAINDER, metavar=cli.trailing.metavar, help=cli.trailing.help)

    def handle(args: argparse.Namespace) -> int:
        handler: Handler = resolve(cli.handler) if cli.handler else run
        return handler(entry, args)

    parser.set_defaults(handler=handle)


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result model as JSON")


def run(entry: ToolDef, args: argparse.Namespace) -> int:
    """Run the tool, print `render(result)` or the JSON, and exit 1 when a verdict field is false."""
    assert entry.cli is not None and entry.cli.render is not None, f"{entry.name} names no renderer"
    result = run_tool(entry, args)
    emit(result, args, resolve(entry.cli.render))
    return exit_code(result, entry.cli.verdict)


def run_tool(entry: ToolDef, args: argparse.Namespace) -> BaseModel:
    """Validate the options through the tool's request model and run it, as the MCP server does."""
    from hyperloom.core.workspace import Workspace

    if entry.cli is not None and entry.cli.trailing is not None:
        take_trailing(entry.cli.trailing, args)
    return entry.run(model_from_args(entry.request, args), Workspace.from_env(), progress_printer())


def take_trailing(trailing: Trailing, args: argparse.Namespace) -> None:
    """Hand the words after the options (a leading `--` dropped) to the trailing fields: one each, the rest to the last."""
    words = list(getattr(args, TRAILING_DEST, None) or [])
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        return
    *singles, rest = trailing.fields
    for field in singles:
        setattr(args, field, words.pop(0) if words else None)
    setattr(args, rest, words)


def exit_code(result: BaseModel, verdict: tuple[str, ...]) -> int:
    """1 when one of the `verdict` fields is False (None means not judged), else 0."""
    return EXIT_FAILED_VERDICT if any(getattr(result, field) is False for field in verdict) else EXIT_OK


def emit(result: BaseModel, args: argparse.Namespace, render: Callable[[BaseModel], str]) -> None:
    print(result.model_dump_json(indent=2) if args.json else render(result))


LINE_EVERY_S = 1.0


def progress_printer() -> ProgressFn | None:
    """Progress on stderr: a line redrawn in place on a terminal; elsewhere (a log file, a pipe) one line per step
    done with the seconds since the call began, so a logged overnight run can be followed with `tail -f`."""
    began = time.monotonic()
    if not sys.stderr.isatty():
        said = [began - LINE_EVERY_S]

        def line(done: int, total: int) -> None:
            now = time.monotonic()
            if done >= total or now - said[0] >= LINE_EVERY_S:  # a fast loop (a census) prints a line a second, not one a unit
                said[0] = now
                print(f"progress: {done}/{total} ({100 * done / max(total, 1):.0f} %) after {now - began:.0f} s", file=sys.stderr,
                      flush=True)

        return line

    def show(done: int, total: int) -> None:
        end = "" if done < total else "\n"
        print(f"\r{done}/{total} ({100 * done / max(total, 1):.0f} %)", end=end, file=sys.stderr)

    return show
