"""The one form a bench candidate takes, in every front end: a lever name, or a list of lever names tried together.

MCP's `candidates` is a list of them (`["compile", ["static_cache", "decode_loop"]]`); each CLI `--candidate` is one
(`--candidate compile --candidate '["static_cache", "decode_loop"]'`). A list of candidates where one is expected (a
CLI `--candidate '[["compile"], ["graph"]]'`) is taken as those candidates."""

from __future__ import annotations

from typing import Any

FORM = "each a lever or a list of levers tried together, e.g. \"compile\" or [\"static_cache\", \"decode_loop\"]"
EXAMPLE = ("--candidate compile --candidate '[\"static_cache\", \"decode_loop\"]' on the command line; [\"compile\", [\"static_cache\", "
           "\"decode_loop\"]] over MCP")


def candidates(value: Any) -> Any:
    """`value` as a list of candidates, each a list of lever names; what is none of the accepted forms is refused with them."""
    if value is None:
        return []
    if isinstance(value, str):
        return [[value]]
    if not isinstance(value, list | tuple):
        raise ValueError(f"give candidates {FORM} ({EXAMPLE})")
    found: list[list[str]] = []
    for item in value:
        if isinstance(item, list | tuple) and any(isinstance(inner, list | tuple) for inner in item):
            found += [_one(inner) for inner in item]  # a list of candidates where one was expected
        else:
            found.append(_one(item))
    return found


def _one(item: Any) -> list[str]:
    if isinstance(item, str):
        return [item]
    if isinstance(item, list | tuple) and item and all(isinstance(name, str) for name in item):
        return list(item)
    raise ValueError(f"a candidate is a lever or a list of levers tried together, not {str(item)[:80]}: {EXAMPLE}")
