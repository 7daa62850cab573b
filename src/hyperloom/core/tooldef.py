"""What the tool catalog (tools/catalog.py) is made of: a tool's definition for every front end (ToolDef, its MCP
behaviour hints, its `hyperloom` command) and a family of tools offered over MCP as one. Importing it imports no tool:
a definition names its models and function as 'module:attribute' strings, imported when first read."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import BaseModel

    from hyperloom.core.progress import ProgressFn
    from hyperloom.core.workspace import Workspace


def resolve(ref: Any) -> Any:
    """The object a 'package.module:attribute' string names, imported now; anything else as it is."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


# The CLI's records are NamedTuples, not dataclasses: building a dataclass costs every start-up about 1.5 ms.
class Trailing(NamedTuple):
    """Request fields a command takes as the words after its options (after `--`): each field but the last takes
    one word, the last a list of the rest."""

    fields: tuple[str, ...]
    metavar: str
    help: str


class CliDef(NamedTuple):
    """How the `hyperloom` command offers a tool. Functions are 'module:function' names, imported only when the
    command runs; without `handler`, the command runs the tool with one option per request field, prints
    `render(result)` (or --json) and exits 1 when a `verdict` field is false."""

    path: tuple[str, ...]  # the words after `hyperloom`: ("census",), ("gate", "check")
    render: str | None = None  # result -> text
    verdict: tuple[str, ...] = ()  # result fields; exit 1 when one is False (None: not judged)
    group_help: str | None = None  # the help of the group path[:-1], on one entry of the group
    default: bool = False  # the group's verb when none is given (`hyperloom tune --spec S` is `tune start`)
    aliases: tuple[str, ...] = ()  # other names of the last word
    options: str | None = None  # (parser, entry) -> None: adds the options instead of one per request field
    handler: str | None = None  # (entry, args) -> exit code: runs the command instead of run, render, verdict
    trailing: Trailing | None = None
    via: str | None = None  # no command of its own: the option of path's command that runs this tool


class Family(NamedTuple):
    """Catalog entries that are one object's verbs (a tuning session's start, status, propose, stop, report), offered
    over MCP as one tool whose `action` argument picks the verb: one definition in the model's context instead of one
    per verb, and one name to find. Each entry keeps its own `hyperloom` command and Python entry point."""

    name: str
    title: str
    description: str  # what the object is for, then one short line per action
    actions: tuple[tuple[str, str], ...]  # (action, catalog entry name), in the order a caller uses them


class Hints(NamedTuple):
    """A tool's behaviour as MCP annotates it: whether it only reads, whether what it writes destroys, whether a repeat
    with the same arguments changes nothing more, and whether it reaches outside the workspace (a server, the web)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False


class ToolDef:
    """One tool: its models, its function, truthful behaviour hints (Hints), and its `hyperloom` command.

    `request`, `result` and `run` are each the object or its 'module:attribute' name; reading the
    attribute imports a name once and returns the object.
    """

    def __init__(
        self,
        *,
        name: str,
        title: str,
        description: str,
        request: type[BaseModel] | str,
        result: type[BaseModel] | str,
        run: Callable[[Any, Workspace, ProgressFn | None], BaseModel] | str,
        hints: Hints,
        cli: CliDef | None = None,
    ) -> None:
        self.name, self.title, self.description, self.cli = name, title, description, cli
        self.read_only, self.destructive, self.idempotent, self.open_world = hints
        self._refs: dict[str, Any] = {"request": request, "result": result, "run": run}

    def _get(self, field: str) -> Any:
        value = self._refs[field] = resolve(self._refs[field])
        return value

    @property
    def request(self) -> type[BaseModel]:
        return self._get("request")

    @property
    def result(self) -> type[BaseModel]:
        return self._get("result")

    @property
    def run(self) -> Callable[[Any, Workspace, ProgressFn | None], BaseModel]:
        return self._get("run")

    def __repr__(self) -> str:
        return f"ToolDef(name={self.name!r})"
