"""One member of a JSON object's member object, added or removed as text: every other byte stays as it was.

Adding returns the exact text inserted, so that removing it gives the user's file back byte for byte; a file
edited around the insertion since is handled by cutting the member out along with one comma.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class Member:
    """A member of a JSON object: `key_at` its opening quote, `value_end` the index just past its value."""

    key: str
    key_at: int
    value_at: int
    value_end: int


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]  (the pattern matches the empty string)


def members(text: str, brace_at: int) -> tuple[list[Member], int]:
    """The members of the object whose `{` is at `brace_at`, and the index of its `}`. The text must be valid JSON."""
    found: list[Member] = []
    at = _skip(text, brace_at + 1)
    if text[at] == "}":
        return found, at
    while True:
        key, after_key = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
        value_at = _skip(text, _skip(text, after_key) + 1)  # past the colon
        _, value_end = _DECODER.raw_decode(text, value_at)
        found.append(Member(key, at, value_at, value_end))
        at = _skip(text, value_end)
        if text[at] == "}":
            return found, at
        at = _skip(text, at + 1)  # past the comma


def _indent_unit(text: str) -> str | None:
    """The indentation of the file's first indented line, '' for a one-line file."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else ("" if "\n" not in text.strip() else None)


def _member_text(key: str, value: Any, unit: str, depth: int) -> str:
    if not unit:
        return f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
    dumped = json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + unit * depth)
    return f"{json.dumps(key)}: {dumped}"


def insert_member(text: str, path: tuple[str, ...], key: str, value: Any) -> tuple[int, str]:
    """Where to insert, and what, so that the object at `path` (keys from the top; the last may be absent and is
    then created around the member) gains `key: value`. `text` must be a JSON object."""
    unit = _indent_unit(text) or ""
    brace_at, depth = _skip(text, 0), 1
    for step, name in enumerate(path):
        found, close_at = members(text, brace_at)
        inner = next((m for m in found if m.key == name), None)
        if inner is None:  # create the rest of the path around the member
            nested: Any = {key: value}
            for outer in reversed(path[step + 1 :]):
                nested = {outer: nested}
            return _append(text, found, brace_at, close_at, _member_text(name, nested, unit, depth), unit, depth)
        brace_at, depth = inner.value_at, depth + 1
    found, close_at = members(text, brace_at)
    return _append(text, found, brace_at, close_at, _member_text(key, value, unit, depth), unit, depth)


def _append(text: str, found: list[Member], brace_at: int, close_at: int, member: str, unit: str, depth: int) -> tuple[int, str]:
    newline = "\n" if unit else " "
    if found:
        return found[-1].value_end, f",{newline}{unit * depth}{member}"
    return brace_at + 1, f"{newline}{unit * depth}{member}{newline}{unit * (depth - 1)}" if unit else member


def remove_member(text: str, brace_at: int, key: str) -> str:
    """`text` without the member `key` of the object at `brace_at` and one comma beside it."""
    found, close_at = members(text, brace_at)
    index = next(i for i, m in enumerate(found) if m.key == key)
    member = found[index]
    if len(found) == 1:
        return text[: brace_at + 1] + text[close_at:]
    if index + 1 < len(found):  # up to the next member, taking the comma after this one
        return text[: member.key_at] + text[found[index + 1].key_at :]
    return text[: found[index - 1].value_end] + text[member.value_end :]  # the last: drop the comma before it


def object_at(text: str, path: tuple[str, ...]) -> int | None:
    """The index of the `{` of the object at `path`, or None when a key on the way is absent."""
    brace_at = _skip(text, 0)
    for name in path:
        found, _ = members(text, brace_at)
        inner = next((m for m in found if m.key == name), None)
        if inner is None or text[inner.value_at] != "{":
            return None
        brace_at = inner.value_at
    return brace_at
