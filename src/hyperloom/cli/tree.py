"""The `hyperloom` command tree, generated from the tool catalog (one command per tool) and the short table of
commands that are no tool. Building it imports no tool: a command's options are added, and its models
imported, only for the command that runs (or for every command, when a test or help asks)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hyperloom.cli.extras import EXTRAS
from hyperloom.tools.catalog import CATALOG, ToolDef, resolve

HELP_WORDS = ("-h", "--help")


@dataclass(frozen=True)
class Leaf:
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


def choose(argv: Sequence[str]) -> tuple[Leaf | None, list[str]]:
    """The command `argv` names, and `argv` with its group's default verb put in where none is given
    (`hyperloom tune --spec S` runs `hyperloom tune start --spec S`)."""
    argv = list(argv)
    at = next((i for i, word in enumerate(argv) if not word.startswith("-")), len(argv))
    prefix: tuple[str, ...] = ()
    while True:
        leaf = next((leaf for leaf in leaves() if leaf.path == prefix), None)
        if leaf is not None:
            return leaf, argv
        word = argv[at] if at < len(argv) else None
        name = _child(prefix, word)
        if name is None:
            default = next((leaf for leaf in leaves() if leaf.default and leaf.path[:-1] == prefix), None) if prefix else None
            if default is None or word is None or word in HELP_WORDS:
                return None, argv
            return default, [*argv[:at], default.path[-1], *argv[at:]]
        prefix, at = (*prefix, name), at + 1


def _child(prefix: tuple[str, ...], word: str | None) -> str | None:
    """The name of the command or group under `prefix` that `word` names (an alias included), else None."""
    depth = len(prefix)
    for leaf in leaves():
        if leaf.path[:depth] == prefix and len(leaf.path) > depth:
            if word == leaf.path[depth] or (len(leaf.path) == depth + 1 and word in leaf.aliases):
                return leaf.path[depth]
    return None


def build_parser(only: Leaf | None = None, every: bool = True) -> argparse.ArgumentParser:
    """The parser; every command is configured (its tool's models imported) unless `every` is false, when only `only` is."""
    from hyperloom import __version__

    parser = argparse.ArgumentParser(prog="hyperloom", description="AMD-GPU-first kernel optimizer tools.")
    parser.add_argument("--version", action="version", version=f"hyperloom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    groups = {(): parser.add_subparsers(dest="command", required=True, metavar="COMMAND")}
    for leaf in leaves():
        for depth in range(1, len(leaf.path)):
            group = leaf.path[:depth]
            if group not in groups:
                text = _escaped(group_help(group))
                sub = groups[group[:-1]].add_parser(group[-1], help=text, description=text)
                groups[group] = sub.add_subparsers(dest="_".join(group) + "_command", required=True)
        sub = groups[leaf.path[:-1]].add_parser(
            leaf.path[-1], help=_escaped(leaf.help), aliases=list(leaf.aliases), description=_escaped(leaf.description or leaf.help),
        )
        if every or leaf is only:
            leaf.configure(sub)
    return parser
