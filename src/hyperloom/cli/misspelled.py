"""Words argparse did not recognize, refused by the command that was meant, each misspelled flag with its closest valid
name (`--pairz` -> `--pairs`), not argparse's bare "unrecognized arguments"."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from hyperloom.core.closest import closest


def command_parser(parser: argparse.ArgumentParser, path: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the command at `path` (the root's when the path stops at a group or names nothing)."""
    for word in path:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups or word not in groups[0].choices:
            break
        parser = groups[0].choices[word]
    return parser


def refuse(parser: argparse.ArgumentParser, path: Sequence[str], words: Sequence[str]) -> NoReturn:
    """Exit 2 with the command's usage, the words it does not take, and the closest valid flag to each unknown one
    (its options listed when one has none near it)."""
    command = command_parser(parser, path)
    flags = {flag[2:]: flag for action in command._actions for flag in action.option_strings if flag.startswith("--")}
    hints, lost = [], False
    for word in (w.split("=", 1)[0] for w in words if w.startswith("--")):
        near = closest(word[2:], flags)  # compared without the dashes every flag shares
        hints.append(f"{word} (did you mean {flags[near]}?)" if near is not None else f"{word} (no option is near it)")
        lost = lost or near is None
    listed = f"; its options: {', '.join(flags.values())}" if lost or not hints else ""
    command.error(f"unrecognized arguments: {' '.join(words)}" + "".join(f"; {hint}" for hint in hints) + listed)
