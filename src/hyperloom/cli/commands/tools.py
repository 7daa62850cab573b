"""`hyperloom tools`: the MCP tools with their schemas, read from the server's own registration."""

from __future__ import annotations

import argparse
import json

import anyio

from hyperloom.cli.exits import EXIT_OK


def run(args: argparse.Namespace) -> int:
    from hyperloom.mcp_server.server import build_server  # the MCP registration is the one source of schemas

    listed = anyio.run(build_server().list_tools)
    if args.json:
        print(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed], indent=2))
        return EXIT_OK
    for t in listed:
        hints = t.annotations
        flags = [n for n, on in (("read-only", hints.read_only_hint), ("idempotent", hints.idempotent_hint)) if on]
        required = t.input_schema.get("required", [])
        params = ", ".join(p if p in required else f"{p}?" for p in t.input_schema["properties"])
        print(f"{t.name} [{', '.join(flags) or 'writes'}]\n  {t.description}\n  parameters: {params}\n")
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the full tool list with schemas as JSON")
    parser.set_defaults(handler=run)
