"""What a workload's file defines, read with `ast` without running it: its top-level callables, whether its top level
runs anything, and a function's knobs. So a mistake in how a workload is named (a factory's module given as a script,
a misspelled factory, a knob the factory does not take) is refused before any worker is built or anything frozen,
with the names the file does define."""

from __future__ import annotations

import ast
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperloom.core.closest import closest, did_you_mean
from hyperloom.core.errors import HyperloomError
from hyperloom.core.factory import described, typed

FACTORY_NAMES = ("build", "make", "create", "setup", "workload")  # offered first when a file defines several factories
BUILTIN_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


@dataclass(frozen=True)
class Outline:
    """A workload file's top level: its public functions and classes (`callables`, in order), those that look like a
    factory (`factories`: functions callable without arguments, the likeliest first, then classes with a step()), every
    name it binds, whether a name not bound may still be there (a star import, a module __getattr__), and whether it
    runs code beyond definitions (a call, a loop, a `with`, a main guard)."""

    name: str
    callables: tuple[str, ...]
    factories: tuple[str, ...]
    bound: frozenset[str]
    open_ended: bool
    runs: bool
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)


def outline(path: Path) -> Outline | None:
    """The file's outline, or None when it does not parse (the worker then reports the syntax error where it is)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return None
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    public = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
              and not n.name.startswith("_")]
    stepping = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and any(getattr(m, "name", "") == "step" for m in n.body)}
    factories = sorted((name for name in public if (name in functions and _no_arguments(functions[name])) or name in stepping),
                       key=lambda name: (name in stepping, name not in FACTORY_NAMES,
                                         FACTORY_NAMES.index(name) if name in FACTORY_NAMES else 0))
    bound = {name for statement in tree.body for name in _bound(statement)}
    open_ended = "__getattr__" in bound or any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body)
    return Outline(path.name, tuple(public), tuple(factories), frozenset(bound), open_ended, any(_runs(s) for s in tree.body), functions)


def refuse_factory_module_as_script(path: Path, given: str) -> None:
    """A file given without `:function` that defines a factory and runs nothing at its top level is a factory's module:
    timed as a script its step would be an import. Refused with the factory it most likely meant."""
    found = outline(path)
    if found is None or found.runs or not found.factories:
        return
    raise HyperloomError(f"{given} defines {', '.join(found.callables)} and runs nothing at its top level: as a script, its step would "
                         f"time an import (did you mean {given}:{found.factories[0]}?)",
                         f"name the factory: {given}:{found.factories[0]} (file.py:function); or, to time it as a script, give it a top "
                         "level that runs its work")


def refuse_missing_function(path: Path, function: str, given: str) -> None:
    """`function` not defined at the file's top level (and no star import or module __getattr__ that could bring it):
    refused with the file's callables and the closest."""
    found = outline(path)
    if found is None or function in found.bound or found.open_ended:
        return
    near = closest(function, found.callables)
    where = given.rpartition(":")[0]
    raise HyperloomError(f"the workload {given} cannot be loaded: {found.name} defines no {function}"
                         + did_you_mean(function, found.callables)
                         + (f"; its callables: {', '.join(found.callables)}" if found.callables else "; it defines no function"),
                         f"pass {where}:{near or (found.factories or found.callables or ('FUNCTION',))[0]}")


def refuse_unknown_knobs(path: Path, function: str, knobs: dict[str, str]) -> None:
    """Knobs the file's `function` does not take (a keyword parameter with a default), or a value its annotation (or
    its default's type) refuses: refused, named, before anything is built. A function taking **kwargs takes any name."""
    found = outline(path)
    node = found.functions.get(function) if found is not None else None
    if node is None or not knobs:
        return
    declared = _knobs(node)
    if node.args.kwarg is None:
        unknown = [name for name in knobs if name not in declared]
        if unknown:
            raise HyperloomError(f"{function} declares no knob {unknown[0]!r}" + did_you_mean(unknown[0], declared)
                                 + (f"; it declares {', '.join(declared)}" if declared else "; it declares none"),
                                 "use a keyword argument of the factory that has a default")
    for name, value in knobs.items():
        hint = declared.get(name)
        if hint is None:
            continue
        try:
            typed(value, hint)
        except ValueError:
            raise HyperloomError(f"knob {name} takes {described(hint)}, not {value!r}",
                                 f"give {name} a value its annotation in {function} takes") from None


def _no_arguments(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Callable with no argument: every positional parameter has a default, every keyword-only one too."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    return len(args.defaults) == len(positional) and all(d is not None for d in args.kw_defaults)


def _knobs(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    """The function's keyword parameters with a default, each with the type its value takes where the source says it
    plainly (int, float, bool, str, a Literal of constants, Optional of those; else the default constant's type), or None."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg: _annotation(a.annotation) or _default_type(d) for a, d in pairs}


def _annotation(node: ast.expr | None) -> Any:
    if node is None:
        return None
    if isinstance(node, ast.Name):
        return BUILTIN_TYPES.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and _is_none(node.right):  # X | None
        inner = _annotation(node.left)
        return typing.Optional[inner] if inner is not None else None
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else node.value.id if isinstance(node.value, ast.Name) else ""
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal" and all(isinstance(i, ast.Constant) for i in items):
            return typing.Literal[tuple(i.value for i in items)]  # type: ignore[attr-defined,index]
        if head == "Optional" and len(items) == 1 and (inner := _annotation(items[0])) is not None:
            return typing.Optional[inner]
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _default_type(node: ast.expr | None) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in BUILTIN_TYPES.values():
        return type(node.value)
    return None


def _bound(statement: ast.stmt) -> list[str]:
    """The names a top-level statement binds (in both branches of an `if` or a `try`)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(statement, ast.If | ast.Try | ast.With | ast.For | ast.While):
        inner = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
        inner += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
        return [name for s in inner for name in _bound(s)] + ([n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)]
                                                            if isinstance(statement, ast.For) else [])
    return []


def _runs(statement: ast.stmt) -> bool:
    """Whether a top-level statement runs work beyond defining names: a definition, an import, an assignment, a
    docstring, `pass`, or an `if`/`try` holding only those does not; a main guard, a call, a loop or a `with` does."""
    if isinstance(statement,
                  ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign
                  | ast.AugAssign | ast.Pass):
        return False
    if isinstance(statement, ast.Expr):
        return not isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.If):
        guard = ast.unparse(statement.test).replace("'", '"')
        return "__name__" in guard or any(_runs(s) for s in [*statement.body, *statement.orelse])
    if isinstance(statement, ast.Try):
        return any(_runs(s) for s in [*statement.body, *statement.orelse, *statement.finalbody,
                                      *(s for h in statement.handlers for s in h.body)])
    return True
