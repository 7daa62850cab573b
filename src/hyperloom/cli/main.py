"""`hyperloom`: the command-line front end over the tool catalog."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence

import anyio
from pydantic import BaseModel, ValidationError

from hyperloom import __version__
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.cli.render import freeze_report, gate_report, table
from hyperloom.core.errors import HyperloomError
from hyperloom.core.toolchain import discover_all
from hyperloom.core.workspace import Workspace
from hyperloom.tools.catalog import tool

EXIT_OK, EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR = 0, 1, 2


def _progress_printer() -> Callable[[int, int], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        print(f"\r{done}/{total} elements ({100 * done / max(total, 1):.0f} %)", end="" if done < total else "\n", file=sys.stderr)

    return show


def _run_tool(name: str, args: argparse.Namespace) -> BaseModel:
    entry = tool(name)
    request = model_from_args(entry.request, args)
    return entry.run(request, Workspace.from_env(), _progress_printer())


def cmd_gate_check(args: argparse.Namespace) -> int:
    result = _run_tool("correctness_gate", args)
    print(result.model_dump_json(indent=2) if args.json else gate_report(result))
    return EXIT_OK if result.passed else EXIT_FAILED_VERDICT


def cmd_gate_freeze(args: argparse.Namespace) -> int:
    result = _run_tool("gate_freeze", args)
    print(result.model_dump_json(indent=2) if args.json else freeze_report(result))
    return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    from hyperloom.mcp_server.server import build_server  # the MCP registration is the one source of schemas

    listed = anyio.run(build_server().list_tools)
    if args.json:
        print(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed], indent=2))
    else:
        for t in listed:
            hints = t.annotations
            flags = [n for n, on in (("read-only", hints.read_only_hint), ("idempotent", hints.idempotent_hint)) if on]
            params = ", ".join(
                f"{p}{'' if p in t.input_schema.get('required', []) else '?'}" for p in t.input_schema["properties"]
            )
            print(f"{t.name} [{', '.join(flags) or 'writes'}]\n  {t.description}\n  parameters: {params}\n")
    return EXIT_OK


def cmd_toolchain(args: argparse.Namespace) -> int:
    found = discover_all()
    if args.json:
        print(json.dumps([info.model_dump() for info in found], indent=2))
    else:
        rows = [(i.name, i.version or "-", i.path or "not found", i.found_by or i.install_hint) for i in found]
        print(table(["tool", "version", "path", "found by / how to get it"], rows))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyperloom", description="AMD-GPU-first kernel optimizer tools.")
    parser.add_argument("--version", action="version", version=f"hyperloom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    gate = commands.add_parser("gate", help="correctness gate: compare outputs with references under a declared tolerance")
    gate_commands = gate.add_subparsers(dest="gate_command", required=True)
    check = gate_commands.add_parser("check", help=tool("correctness_gate").description)
    add_model_arguments(check, tool("correctness_gate").request)
    check.add_argument("--json", action="store_true", help="print the result model as JSON")
    check.set_defaults(handler=cmd_gate_check)
    freeze = gate_commands.add_parser("freeze", help=tool("gate_freeze").description)
    add_model_arguments(freeze, tool("gate_freeze").request)
    freeze.add_argument("--json", action="store_true", help="print the result model as JSON")
    freeze.set_defaults(handler=cmd_gate_freeze)

    tools = commands.add_parser("tools", help="list the MCP tools with their input and output schemas")
    tools.add_argument("--json", action="store_true", help="print the full tool list with schemas as JSON")
    tools.set_defaults(handler=cmd_tools)

    toolchain = commands.add_parser("toolchain", help="where each external tool was found, and its version")
    toolchain.add_argument("--json", action="store_true", help="print the discovery results as JSON")
    toolchain.set_defaults(handler=cmd_toolchain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        return args.handler(args)
    except HyperloomError as exc:
        print(f"hyperloom: error: {exc}", file=sys.stderr)
    except ValidationError as exc:
        from hyperloom.mcp_server.registry import describe_validation_error

        print(f"hyperloom: error: invalid arguments: {describe_validation_error(exc)}", file=sys.stderr)
    return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
