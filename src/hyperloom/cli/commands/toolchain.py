"""`hyperloom toolchain`: where each external tool was found, and its version."""

from __future__ import annotations

import argparse
import json

from hyperloom.cli.exits import EXIT_OK
from hyperloom.cli.render.text import table
from hyperloom.core.toolchain import discover_all


def run(args: argparse.Namespace) -> int:
    found = discover_all()
    if args.json:
        print(json.dumps([info.model_dump() for info in found], indent=2))
    else:
        rows = [(i.name, i.version or "-", i.path or "not found", i.found_by or i.install_hint) for i in found]
        print(table(["tool", "version", "path", "found by / how to get it"], rows))
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the discovery results as JSON")
    parser.set_defaults(handler=run)
