"""One argument-validation layer for every front end (MCP server, CLI, Python API).

A call's arguments become the tool's request model here, or one HyperloomError that names each
offending argument, the cause and the next step, in a few hundred characters: unknown arguments
are refused with the closest valid name, no input is echoed back at length, and no pydantic dump
or documentation link reaches the caller. Two mistakes models often make are repaired, not
refused: a JSON text where a list or object is expected, and one string where a list of strings is.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from hyperloom.core.closest import closest
from hyperloom.core.errors import HyperloomError

MAX_PROBLEMS = 4


def validate_arguments(model: type[BaseModel], arguments: Mapping[str, Any]) -> BaseModel:
    """`arguments` as an instance of `model`, or a HyperloomError with cause and next step."""
    if not isinstance(arguments, Mapping):
        raise HyperloomError("the arguments are not an object of named values", f"pass an object with {_names(model)}")
    fields = model.model_fields
    unknown = [str(name) for name in arguments if name not in fields]
    if unknown:
        raise HyperloomError(
            "unknown argument" + ("s " if len(unknown) > 1 else " ") + ", ".join(_unknown(name, fields) for name in unknown[:MAX_PROBLEMS]),
            f"remove {'them' if len(unknown) > 1 else 'it'}; valid arguments: {_names(model)}",
        )
    repaired = {name: _repair(fields[name].annotation, value) for name, value in arguments.items()}
    try:
        return model.model_validate(repaired)
    except ValidationError as exc:
        raise HyperloomError(*describe(model, exc)) from None
    except RecursionError:
        raise HyperloomError("an argument nests too deeply", "pass flat values: lists of numbers or strings") from None


def describe(model: type[BaseModel], error: ValidationError) -> tuple[str, str]:
    """(cause, next step) for a validation error: each bad argument with what it must be."""
    causes, steps = [], []
    for item in error.errors(include_url=False, include_input=False)[:MAX_PROBLEMS]:
        location = [str(part) for part in item["loc"]]
        name = location[0] if location else ""
        where = ".".join(location) or "arguments"
        message = _message(item)
        causes.append(f"{where}: {message}")
        field = model.model_fields.get(name)
        if item["type"] == "missing":
            steps.append(f"pass {name} ({_shorten(field.description or _kind(field.annotation))})" if field else f"pass {name}")
        elif field is not None and item["type"] == "value_error":  # a validator's own refusal names the forms it takes
            steps.append(f"fix {name}" + (f" ({_shorten(field.description)})" if field.description else ""))
        elif field is not None:
            steps.append(f"give {name} as {_kind(field.annotation)}" + (f" ({_shorten(field.description)})" if field.description else ""))
        else:
            steps.append("fix the arguments and call again")
    more = len(error.errors()) - MAX_PROBLEMS
    cause = "invalid argument" + ("s" if len(causes) > 1 else "") + ": " + "; ".join(causes) + (f"; and {more} more" if more > 0 else "")
    return cause, "; ".join(dict.fromkeys(steps))


def _message(item: Mapping[str, Any]) -> str:
    message = str(item["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return _shorten(message, 240)


def _unknown(name: str, fields: Mapping[str, Any]) -> str:
    shown = _shorten(name, 40)
    near = closest(name, fields)
    return f"{shown!r} (did you mean {near!r}?)" if near is not None else repr(shown)


def _names(model: type[BaseModel]) -> str:
    required = [n for n, f in model.model_fields.items() if f.is_required()]
    optional = [n for n, f in model.model_fields.items() if not f.is_required()]
    return ", ".join(required + optional) + (f" ({', '.join(required)} required)" if required else "")


def _shorten(text: str | None, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _repair(annotation: Any, value: Any) -> Any:
    """A JSON text for a list or object is parsed; one string for a list of strings becomes a one-item list."""
    if not isinstance(value, str):
        return value
    target = _unwrap(annotation)
    origin = typing.get_origin(target)
    if origin in (list, dict, tuple) or (isinstance(target, type) and issubclass(target, BaseModel)):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except (ValueError, RecursionError):
                return value
        if origin is list and _unwrap(typing.get_args(target)[0]) is str:
            return [value]
    return value


def _unwrap(annotation: Any) -> Any:
    """`X | None` as X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _kind(annotation: Any) -> str:
    """A type as a model reads it: 'a list of strings', 'an integer', 'one of "grid", "tpe"'."""
    target = _unwrap(annotation)
    optional = target is not annotation
    origin = typing.get_origin(target)
    if origin is Literal:
        text = "one of " + ", ".join(json.dumps(a) for a in typing.get_args(target))
    elif origin is list:
        item = _plural(_kind(typing.get_args(target)[0]))
        text = "a list of " + (item if " or " not in item else f"({item})")
    elif origin is dict:
        key, value = typing.get_args(target)
        text = f"an object of {_plural(_kind(key))} to {_plural(_kind(value))}"
    elif origin in (typing.Union, types.UnionType):
        text = " or ".join(_kind(a) for a in typing.get_args(target))
    else:
        names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", Any: "values"}
        text = names.get(target, getattr(target, "__name__", str(target)))
    return text + (" (or null)" if optional else "")


def _plural(kind: str) -> str:
    for singular, plural in (("a string", "strings"), ("an integer", "integers"), ("a number", "numbers"), ("true or false", "booleans")):
        if kind == singular:
            return plural
    return kind
