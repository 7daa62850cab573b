"""Lean tool definitions: hosts put every tool's schemas into the model's context in every session.

Input schemas keep what a model needs to call a tool (types, bounds, enums, defaults, descriptions)
and lose pydantic's generated titles. Output schemas keep the types (hosts validate structured
results against them) and lose titles, descriptions and defaults: the result's meaning is in the
tool's description and in each result's own text.
"""

from __future__ import annotations

from typing import Any

_NAMED = ("properties", "$defs", "patternProperties")  # keys under these are names, not schema keywords


def compact(schema: Any, *, drop: frozenset[str]) -> Any:
    """`schema` without the keywords in `drop` (at any depth; property names are never touched)."""
    if isinstance(schema, list):
        return [compact(item, drop=drop) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in _NAMED and isinstance(value, dict):
            out[key] = {name: compact(sub, drop=drop) for name, sub in value.items()}
        else:
            out[key] = compact(value, drop=drop)
    return out


INPUT_DROP = frozenset({"title"})
OUTPUT_DROP = frozenset({"title", "description", "default", "examples"})


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without titles; an optional `X | None` field published as X (omitting it is how to say none)."""
    lean = compact(schema, drop=INPUT_DROP)
    for name, prop in lean.get("properties", {}).items():
        options = prop.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and name not in lean.get("required", []):
            rest = [o for o in options if o != {"type": "null"}]
            prop.pop("anyOf")
            if prop.get("default", 0) is None:
                prop.pop("default")
            prop.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
    return lean


def lean_output(schema: dict[str, Any] | None, depth: int = 1) -> dict[str, Any] | None:
    """The output schema typed to `depth` levels of properties, deeper objects and arrays by their JSON type only."""
    if schema is None:
        return None
    defs = schema.get("$defs", {})

    def walk(node: Any, level: int) -> Any:
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            node = defs.get(node["$ref"].split("/")[-1], {})
        if "anyOf" in node:
            return {"anyOf": [walk(o, level) for o in node["anyOf"]]}
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            if level >= depth or "properties" not in node:
                return {"type": "object"}
            return {"type": "object", "properties": {k: walk(v, level + 1) for k, v in node["properties"].items()},
                    **({"required": node["required"]} if "required" in node else {})}
        if kind == "array":
            return {"type": "array"} if level >= depth else {"type": "array", "items": walk(node.get("items", {}), level + 1)}
        return {k: v for k, v in node.items() if k in ("type", "enum", "const", "format")}

    return walk(schema, 0)
