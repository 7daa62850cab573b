"""A workload factory's contract, as both sides use it: load a `file.py` as a module, read a factory's knobs (its keyword
parameters with a default; their values where a Literal lists them) and turn a request's knob text into the values it
takes, typed by the parameter's annotation (or, without one, its default's type). The workload runner
(tools/workload/worker/runner.py) and profile's capture (tools/profile/capture.py) load and call factories alike through these,
in their worker processes."""

from __future__ import annotations

import enum
import importlib
import importlib.util
import inspect
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hyperloom.core.closest import did_you_mean


class WorkloadContractError(RuntimeError):
    """The workload's factory did not return what the contract asks for."""


class Knobs(dict[str, list[str] | None]):
    """A factory's knobs: each one's allowed values as text where a Literal lists them, else None (what a frozen session
    keeps), and the type each one's value takes (`types`: its annotation, or its default's type without one)."""

    def __init__(self, allowed: dict[str, list[str] | None], types_: dict[str, Any]) -> None:
        super().__init__(allowed)
        self.types = types_


def declared_knobs(factory: Callable[..., Any]) -> Knobs:
    """The factory's knobs: keyword parameters with a default; their values where a Literal annotation lists them."""
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # noqa: BLE001 - annotations that do not resolve list no values
        hints = {}
    allowed: dict[str, list[str] | None] = {}
    kinds: dict[str, Any] = {}
    for name, parameter in inspect.signature(factory).parameters.items():
        if parameter.default is inspect.Parameter.empty or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name)
        allowed[name] = [_text(v) for v in typing.get_args(hint)] if typing.get_origin(hint) is typing.Literal else None
        kinds[name] = hint if hint is not None else (type(parameter.default) if parameter.default is not None else None)
    return Knobs(allowed, kinds)


def load_file(path: str, name: str) -> Any:
    """Import a Python file as module `name` (registered in sys.modules, so what it defines pickles and reloads)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_factory(workload: str) -> Callable[..., Any]:
    """The factory `workload` names (file.py:function or module:function), its module imported (a file that is imported
    already, as an overrides module may have, is that module, its patches kept)."""
    where, _, name = workload.rpartition(":")
    loaded = sys.modules.get(Path(where).stem) if where.endswith(".py") else None
    if loaded is not None and getattr(loaded, "__file__", None) and Path(loaded.__file__).resolve() == Path(where).resolve():
        module = loaded  # imported already (an overrides module patched it): the same module, its patches kept
    else:
        module = load_file(where, Path(where).stem) if where.endswith(".py") else importlib.import_module(where)
    factory = getattr(module, name, None)
    if factory is None:  # an AttributeError: the controller's refusal says the workload cannot be loaded
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                                and getattr(v, "__module__", None) == module.__name__)
        raise AttributeError(f"{where} defines no {name}" + did_you_mean(name, found)
                             + (f"; its callables: {', '.join(found)}" if found else ""))
    if not callable(factory):
        raise WorkloadContractError(f"{workload} is not a function")
    return factory


def knob_values(knobs: dict[str, list[str] | None], given: dict[str, str]) -> dict[str, Any]:
    """Knob values given as text (a request's), as the factory whose declared_knobs are `knobs` takes them: typed by
    each knob's annotation where `knobs` carries them (Knobs), else guessed from the text; a value that does not convert
    is refused with the knob, the value and what it takes."""
    kinds = knobs.types if isinstance(knobs, Knobs) else {}
    values = {}
    for name, value in given.items():
        if name not in knobs:
            raise WorkloadContractError(f"the workload declares no knob {name!r}" + did_you_mean(name, knobs)
                                        + (f"; it declares {', '.join(knobs)}" if knobs else "; it declares none"))
        try:
            values[name] = typed(value, kinds.get(name))
        except ValueError:
            raise WorkloadContractError(f"knob {name} takes {described(kinds.get(name))}, not {value!r}") from None
    return values


def typed(text: str, hint: Any) -> Any:
    """`text` as a value of the annotation `hint`: a Literal's member, an Optional's None ('none') or its type, a bool
    ('true'/'false', '1'/'0', 'yes'/'no'), an int, a float, an enum's member (by name or value), a str; with no
    annotation (None, Any) a number or a bool where the text is one, else the text. ValueError when it is none of these."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        for member in typing.get_args(hint):
            try:
                if typed(text, type(member)) == member:
                    return member
            except ValueError:
                continue
        raise ValueError(text)
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(hint)
        if type(None) in arms and text.strip().lower() in ("none", "null"):
            return None
        for arm in arms:
            if arm is not type(None):
                try:
                    return typed(text, arm)
                except ValueError:
                    continue
        raise ValueError(text)
    if hint is bool:
        word = text.strip().lower()
        if word in ("true", "1", "yes", "on"):
            return True
        if word in ("false", "0", "no", "off"):
            return False
        raise ValueError(text)
    if hint in (int, float):
        return hint(text)
    if hint is str:
        return text
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        for member in hint:
            if text in (member.name, str(member.value)):
                return member
        raise ValueError(text)
    return _guessed(text)


def described(hint: Any) -> str:
    """What a knob of annotation `hint` takes, as a refusal names it: 'one of 8, 64', 'an int', 'true or false'."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(_text(v) for v in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join("none" if arm is type(None) else described(arm) for arm in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(member.name for member in hint)
    return {bool: "true or false", int: "an int", float: "a number", str: "text"}.get(hint, "a value")


def _text(value: Any) -> str:
    """A Literal member as a request names it: an enum's member by its name."""
    return value.name if isinstance(value, enum.Enum) else str(value)


def _guessed(text: str) -> Any:
    """A value with no annotation to go by: a number or a bool where the text is one, else the text."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)
