"""Long text made short without cutting a word: at the last clause boundary before a limit, saying where the whole
text is kept (result.json, breakdown.json), so a reader never meets "its solo pace in the pairs (1.48 ms a step be"."""

from __future__ import annotations

import re

BOUNDARY = re.compile(r"[;:,.)] |\s\(|\s-\s")  # where a clause ends: after ; : , . ) or before a parenthesis or a dash


def at_clause(text: str, limit: int, rest_in: str) -> str:
    """`text` whole when it fits in `limit` characters; else cut at its last clause boundary before the limit (at the
    last space where none is), with '... (the rest in REST_IN)'."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    suffix = f" ... (the rest in {rest_in})"
    room = max(limit - len(suffix), 20)
    ends = [m.start() + 1 for m in BOUNDARY.finditer(text, 0, room + 1) if m.start() + 1 >= room // 2]
    cut = ends[-1] if ends else text.rfind(" ", 0, room + 1)
    return text[: cut if cut > 0 else room].rstrip(" ;:,(-") + suffix
