"""`hyperloom`: the command-line front end over the tool catalog."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from hyperloom import __version__
from hyperloom.cli.commands import agent, allreduce, bench, census, compile, demo, detect, gate, install, roofline, toolchain, tools, tune, validate_skill, verify
from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK  # noqa: F401  (re-exported)
from hyperloom.core.errors import HyperloomError, describe_validation_error

# Each module registers its own subcommand; a new tool adds one module here.
COMMANDS = (demo, detect, census, gate, compile, verify, bench, roofline, tune, allreduce, tools, toolchain, validate_skill, install, agent)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyperloom", description="AMD-GPU-first kernel optimizer tools.")
    parser.add_argument("--version", action="version", version=f"hyperloom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        return args.handler(args)
    except HyperloomError as exc:
        print(f"hyperloom: error: {exc}", file=sys.stderr)
    except ValidationError as exc:
        print(f"hyperloom: error: invalid arguments: {describe_validation_error(exc)}", file=sys.stderr)
    except BrokenPipeError:  # the reader (e.g. `head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
