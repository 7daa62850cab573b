"""`hyperloom install claude|codex` and `hyperloom uninstall claude|codex`: the skill plus the server entry."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyperloom.cli.exits import EXIT_OK
from hyperloom.hosts.install import apply_install, describe, next_steps, plan_install, uninstall
from hyperloom.hosts.locations import locate


def _location(args: argparse.Namespace):
    return locate(args.host, args.scope, Path(args.project) if args.project else None)


def run_install(args: argparse.Namespace) -> int:
    plan = plan_install(_location(args))
    if args.print:
        print(describe(plan))
        return EXIT_OK
    for line in apply_install(plan):
        print(line)
    for step in next_steps(plan.location):
        print(f"next: {step}")
    return EXIT_OK


def run_uninstall(args: argparse.Namespace) -> int:
    for line in uninstall(_location(args)):
        print(line)
    return EXIT_OK


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=["claude", "codex"], help="the agent host: Claude Code or Codex")
    parser.add_argument("--scope", choices=["user", "project"], default="user",
                        help="user (default): for every project; project: this folder only")
    parser.add_argument("--project", help="the project folder for --scope project (default: the working directory)")


def configure(install: argparse.ArgumentParser) -> None:
    install.description = (
        "Copy the hyperloom-kernel-optimizer skill into the host's skills folder and add a 'hyperloom' MCP server "
        "entry to its config (Claude Code: ~/.claude.json or .mcp.json; Codex: ~/.codex/config.toml or "
        ".codex/config.toml), leaving every other entry as it is. Refuses, writing nothing, when the config does "
        "not parse or a skill or server of that name exists that install did not write."
    )
    _common(install)
    install.add_argument("--print", action="store_true", help="show what would be written, and write nothing")
    install.set_defaults(handler=run_install)


def configure_uninstall(remove: argparse.ArgumentParser) -> None:
    remove.description = ("Remove the skill folder and the server entry that `hyperloom install` recorded; anything changed since is "
                          "left in place.")
    _common(remove)
    remove.set_defaults(handler=run_uninstall)
