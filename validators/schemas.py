"""Validate documents against the JSON schemas shipped beside this module."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from hyperloom.core.errors import HyperloomError


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
