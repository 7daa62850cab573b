"""Lean tool definitions: hosts put every tool's schemas into the model's context in every session.

Input schemas keep what a model needs to call a tool (types, value bounds, enums, defaults,
descriptions) and lose pydantic's generated titles, empty-list defaults (omitting a list means
none), empty `items` (no constraint) and the caps that only guard the server (maxLength,
maxItems, maxProperties, and a maximum of SERVER_CAP or more: far above any sensible call);
hyperloom.core.arguments still enforces every limit and its refusal names it.

Output schemas keep the JSON type of every field to one level (hosts validate structured results
against them) and lose titles, descriptions, defaults, value enumerations and `required` (every
field of a result is always sent): the result's meaning is in the tool's description and in each
result's own text. A value that may be null is typed with a list of types. A family of verbs lists no output schema
(registry.build_family_tool says why).
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


INPUT_DROP = frozenset({"title", "maxLength", "maxItems", "maxProperties"})
SERVER_CAP = 1000  # a maximum this large bounds work or memory, not the meaning of a value (which has smaller limits: 1, 64, 100)
OUTPUT_DROP = frozenset({"title", "description", "default", "examples"})


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without titles; an optional `X | None` field published as X (omitting it is how to say none)."""
    lean = _no_empty(compact(schema, drop=INPUT_DROP))
    for name, prop in lean.get("properties", {}).items():
        options = prop.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and name not in lean.get("required", []):
            rest = [o for o in options if o != {"type": "null"}]
            prop.pop("anyOf")
            if prop.get("default", 0) is None:
                prop.pop("default")
            prop.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
    return lean


def _no_empty(schema: Any, named: bool = False) -> Any:
    """`schema` without the keywords that tell a model nothing: `"default": []`, `"items": {}`, a server cap."""
    if isinstance(schema, list):
        return [_no_empty(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if named:
        return {name: _no_empty(sub) for name, sub in schema.items()}
    return {key: _no_empty(value, key in _NAMED) for key, value in schema.items() if not _uninformative(key, value)}


def _uninformative(key: str, value: Any) -> bool:
    if key == "maximum":
        return isinstance(value, int | float) and value >= SERVER_CAP
    return (key == "default" and value == []) or (key == "items" and value == {})


def _nullable(options: list[Any]) -> dict[str, Any]:
    """`anyOf` of plain types (e.g. string or null) as one list of types; anything richer stays an anyOf."""
    if all(isinstance(o, dict) and set(o) == {"type"} and isinstance(o["type"], str) for o in options):
        return {"type": [o["type"] for o in options]}
    return {"anyOf": options}


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
            return _nullable([walk(o, level) for o in node["anyOf"]])
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            if level >= depth or "properties" not in node:
                return {"type": "object"}
            return {"type": "object", "properties": {k: walk(v, level + 1) for k, v in node["properties"].items()}}
        if kind == "array":
            return {"type": "array"} if level >= depth else {"type": "array", "items": walk(node.get("items", {}), level + 1)}
        kept = ("type", "const", "format") if "type" in node else ("enum", "const", "format")  # an enum only where no type says it
        return {k: v for k, v in node.items() if k in kept}

    return walk(schema, 0)
