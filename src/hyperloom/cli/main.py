"""`hyperloom`: the command-line front end over the tool catalog.

The command tree comes from the catalog (hyperloom.cli.tree); start-up imports only the command that runs,
so `hyperloom --version` imports no tool and `hyperloom census` none but the census."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK  # noqa: F401  (re-exported)
from hyperloom.cli.tree import build_parser, choose, leaves  # noqa: F401  (re-exported)

# Pydantic looks for plugins by reading the metadata of every installed distribution the first time a
# model is built: about 30 ms of every command on the 2-core machine, for plugins Hyperloom never uses.
# A user who sets the variable keeps their choice.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main(argv: Sequence[str] | None = None) -> int:
    chosen, words = choose(sys.argv[1:] if argv is None else argv)
    parser = build_parser(chosen, every=False)
    args, unknown = parser.parse_known_args(words)
    if unknown:
        from hyperloom.cli.misspelled import refuse

        refuse(parser, chosen, unknown)
    import logging

    from pydantic import ValidationError

    from hyperloom.core.errors import HyperloomError, describe_validation_error

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
