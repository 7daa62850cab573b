"""`hyperloom spec check|init|example|schema`: bring a kernel into the loop."""

from __future__ import annotations

import argparse
import json

from hyperloom.cli.common import report_command
from hyperloom.cli.exits import EXIT_OK
from hyperloom.cli.render_spec import spec_check_report, spec_example_report, spec_init_report


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="spec_command", required=True)
    report_command(commands, "check", "spec_check", spec_check_report, verdict="ok")
    report_command(commands, "init", "spec_init", spec_init_report)
    report_command(commands, "example", "spec_example", spec_example_report)
    schema = commands.add_parser("schema", help="print the JSON Schema of kernel.yaml (validators/kernel_spec.schema.json)")
    schema.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    from hyperloom.tools.kernelspec.schema import kernel_spec_schema

    print(json.dumps(kernel_spec_schema(), indent=2))
    return EXIT_OK
