"""Command-line options derived from a request model, so the CLI never restates a parameter."""

from __future__ import annotations

import argparse
import json
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from hyperloom.core.arguments import validate_arguments


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def flag_name(field_name: str, is_list: bool) -> str:
    """`case_names` → `--case-name` (repeatable), `max_ulp` → `--max-ulp`."""
    name = field_name[:-1] if is_list and field_name.endswith("s") else field_name
    return "--" + name.replace("_", "-")


def _inline_or_path(text: str) -> Any:
    """A path stays a string; text starting with '[' or '{' is an inline JSON list or object."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not valid inline JSON ({exc}): quote each name and the whole list for the shell, "
                                             "e.g. '[\"compile\", \"channels_last\"]' or '{\"batch\": \"8\"}'") from exc
    return text


def _scalar_type(annotation: Any) -> tuple[Any, list[str] | None]:
    """argparse `type` and `choices` for one element type."""
    if typing.get_origin(annotation) is Literal:
        return str, [str(a) for a in typing.get_args(annotation)]
    if annotation in (int, float, str):
        return annotation, None
    return _inline_or_path, None


def add_model_arguments(parser: argparse.ArgumentParser, model: type[BaseModel], skip: tuple[str, ...] = ()) -> None:
    """One option per field of `model`, except the fields in `skip` (a command may take those positionally)."""
    for name, field in model.model_fields.items():
        if name not in skip:
            _add_field(parser, name, field)


def _add_field(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    annotation = _unwrap_optional(field.annotation)
    help_text = (field.description or "").replace("%", "%%")  # argparse formats help with %
    if annotation is bool:
        default = " (default: on)" if field.default is True else ""
        parser.add_argument(flag_name(name, False), dest=name, action=argparse.BooleanOptionalAction, default=None,
                            help=help_text + default)
        return
    is_list = typing.get_origin(annotation) is list
    element = typing.get_args(annotation)[0] if is_list else annotation
    kind, choices = _scalar_type(_unwrap_optional(element))
    parser.add_argument(
        flag_name(name, is_list),
        dest=name,
        type=kind,
        choices=choices,
        action="append" if is_list else "store",
        required=field.is_required(),
        default=None,
        metavar=None if choices else (name.upper().rstrip("S") if is_list else name.upper()),
        help=help_text + (" (repeat for several)" if is_list else ""),
    )


def model_from_args(model: type[BaseModel], namespace: argparse.Namespace) -> BaseModel:
    """Validate the parsed options through the same model the MCP server uses."""
    values = {name: getattr(namespace, name) for name in model.model_fields if getattr(namespace, name, None) is not None}
    return validate_arguments(model, values)
