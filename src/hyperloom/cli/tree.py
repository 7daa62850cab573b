"""The `hyperloom` command tree, generated from the tool catalog (one command per tool) and the short table of
commands that are no tool. Building it imports no tool: a command's options are added, and its models
imported, only for the command that runs (or for every command, when a test or help asks)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

from hyperloom.cli.extras import EXTRAS
from hyperloom.tools.catalog import CATALOG, ToolDef, resolve

HELP_WORDS = ("-h", "--help")


class Leaf(NamedTuple):
    """One runnable command: its words, its help, and what adds its options and handler."""

    path: tuple[str, ...]
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    aliases: tuple[str, ...] = ()
    description: str | None = None
    default: bool = False  # the group's verb when none is given
    tools: tuple[str, ...] = ()  # the catalog tools it runs


def _escaped(text: str) -> str:
    return text.replace("%", "%%")  # argparse formats help with %


def _configure_tool(entry: ToolDef, parser: argparse.ArgumentParser) -> None:
    from hyperloom.cli.tool_command import configure  # pydantic and the models come with it: not for --version

    configure(parser, entry)


def _configure_extra(ref: str, parser: argparse.ArgumentParser) -> None:
    resolve(ref)(parser)


def _tool_leaf(entry: ToolDef, served: Sequence[ToolDef]) -> Leaf:
    assert entry.cli is not None
    names = (entry.name, *(e.name for e in served))
    return Leaf(
        path=entry.cli.path, help=f"{entry.title} ({', '.join(names)})", configure=functools.partial(_configure_tool, entry),
        aliases=entry.cli.aliases, description=entry.description, default=entry.cli.default, tools=names,
    )


@functools.cache
def leaves() -> tuple[Leaf, ...]:
    """Every command: the catalog's tools in catalog order (a tool run through another's option adds its name to
    that command's), then the commands that are no tool."""
    def served(path: tuple[str, ...]) -> list[ToolDef]:
        return [e for e in CATALOG if e.cli is not None and e.cli.via and e.cli.path == path]

    found = [_tool_leaf(e, served(e.cli.path)) for e in CATALOG if e.cli is not None and e.cli.via is None]
    found += [Leaf(c.path, c.help, functools.partial(_configure_extra, c.configure), c.aliases) for c in EXTRAS]
    return tuple(found)


def group_help(group: tuple[str, ...]) -> str:
    """A group's help, as one of its catalog entries gives it, with the tools its commands run."""
    text = next((e.cli.group_help for e in CATALOG if e.cli is not None and e.cli.group_help and e.cli.path[:-1] == group), "")
    return f"{text} ({', '.join(name for leaf in leaves() if leaf.path[: len(group)] == group for name in leaf.tools)})"


def choose(argv: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """The path of the command (or group) `argv` names, and `argv` with its group's default verb put in where none
    is given (`hyperloom tune --spec S` runs `hyperloom tune start --spec S`)."""
    argv = list(argv)
    at = next((i for i, word in enumerate(argv) if not word.startswith("-")), len(argv))
    path: tuple[str, ...] = ()
    while not any(leaf.path == path for leaf in leaves()):
        word = argv[at] if at < len(argv) else None
        name = next((name for name, leaf in _children(path) if word == name or (leaf is not None and word in leaf.aliases)), None)
        if name is None:
            default = next((leaf for leaf in leaves() if leaf.default and leaf.path[:-1] == path), None) if path else None
            if default is None or word is None or word in HELP_WORDS:
                return path, argv
            return default.path, [*argv[:at], default.path[-1], *argv[at:]]
        path, at = (*path, name), at + 1
    return path, argv


def _children(prefix: tuple[str, ...]) -> list[tuple[str, Leaf | None]]:
    """The words that may follow `prefix`, in order, each with its command (None for a group)."""
    depth, found = len(prefix), {}
    for leaf in leaves():
        if len(leaf.path) > depth and leaf.path[:depth] == prefix:
            found.setdefault(leaf.path[depth], leaf if len(leaf.path) == depth + 1 else None)
    return list(found.items())


def build_parser(chosen: tuple[str, ...] = (), every: bool = True) -> argparse.ArgumentParser:
    """The parser. With `every`, every command is configured (its tool's models imported); without it, only the
    command at `chosen`, and only the groups on its way list their commands."""
    from hyperloom import __version__

    parser = argparse.ArgumentParser(prog="hyperloom", description="AMD-GPU-first kernel optimizer tools.")
    parser.add_argument("--version", action="version", version=f"hyperloom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    _fill(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), (), chosen, every)
    return parser


def _fill(subparsers: argparse._SubParsersAction, prefix: tuple[str, ...], chosen: tuple[str, ...], every: bool) -> None:
    for name, leaf in _children(prefix):
        path = (*prefix, name)
        if leaf is None:
            text = _escaped(group_help(path))
            group = subparsers.add_parser(name, help=text, description=text)
            if every or chosen[: len(path)] == path:
                _fill(group.add_subparsers(dest="_".join(path) + "_command", required=True), path, chosen, every)
            continue
        sub = subparsers.add_parser(name, help=_escaped(leaf.help), aliases=list(leaf.aliases),
                                    description=_escaped(leaf.description or leaf.help))
        if every or leaf.path == chosen:
            leaf.configure(sub)
