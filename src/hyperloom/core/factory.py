"""A workload factory's contract, as both sides use it: load a `file.py` as a module, read a factory's knobs (its keyword
parameters with a default; their values where a Literal lists them) and turn a request's knob text into the values it
takes. The workload runner (tools/workload/runner.py) and profile's capture (tools/profile/capture.py) load and call
factories alike through these, in their worker processes."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any


class WorkloadContractError(RuntimeError):
    """The workload's factory did not return what the contract asks for."""


def declared_knobs(factory: Callable[..., Any]) -> dict[str, list[str] | None]:
    """The factory's knobs: keyword parameters with a default; their values where a Literal annotation lists them."""
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # noqa: BLE001 - annotations that do not resolve list no values
        hints = {}
    knobs: dict[str, list[str] | None] = {}
    for name, parameter in inspect.signature(factory).parameters.items():
        if parameter.default is inspect.Parameter.empty or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name)
        knobs[name] = [str(v) for v in typing.get_args(hint)] if typing.get_origin(hint) is typing.Literal else None
    return knobs


def load_file(path: str, name: str) -> Any:
    """Import a Python file as module `name` (registered in sys.modules, so what it defines pickles and reloads)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def knob_values(knobs: dict[str, list[str] | None], given: dict[str, str]) -> dict[str, Any]:
    """Knob values given as text (a request's), as the factory whose declared_knobs are `knobs` takes them."""
    return {name: _knob_value(knobs, name, value) for name, value in given.items()}


def _knob_value(knobs: dict[str, list[str] | None], name: str, value: str) -> Any:
    """A knob's value as the factory takes it: the Literal's own value, else a number or a bool where the text is one."""
    if name not in knobs:
        raise WorkloadContractError(f"the workload declares no knob {name!r}")
    allowed = knobs[name]
    if allowed is not None:
        return value
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(value.lower(), value)
