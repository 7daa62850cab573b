"""`hyperloom spec schema`: the JSON Schema of kernel.yaml (spec init|check|example are catalog tools)."""

from __future__ import annotations

import argparse
import json

from hyperloom.cli.exits import EXIT_OK


def configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    from hyperloom.tools.kernelspec.schema import kernel_spec_schema

    print(json.dumps(kernel_spec_schema(), indent=2))
    return EXIT_OK
