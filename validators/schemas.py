"""Validate documents against the JSON schemas shipped beside this module."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from hyperloom.core.errors import HyperloomError

if TYPE_CHECKING:
    from pydantic import BaseModel


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The schema `<name>.schema.json` shipped in hyperloom.validators."""
    return json.loads(resources.files("hyperloom.validators").joinpath(f"{name}.schema.json").read_text())


def schema_errors(name: str, document: Any) -> list[str]:
    """Every violation of schema `name`, as 'path: message' lines (empty when valid)."""
    import jsonschema  # 0.1 s of imports, paid only when a document is checked

    validator = jsonschema.Draft202012Validator(load_schema(name))
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]


def require_valid(name: str, document: Any, label: str, next_step: str) -> None:
    if errors := schema_errors(name, document):
        shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        raise HyperloomError(f"{label} does not follow the {name} format: {shown}", next_step)


def model_schema(model: type[BaseModel], schema_id: str, title: str, description: str) -> dict[str, Any]:
    """A result model's JSON Schema as Hyperloom commits it under validators/: draft 2020-12, with its id, title and
    description (what file it describes) in place of pydantic's."""
    schema = model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, "title": title, "description": description,
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}
