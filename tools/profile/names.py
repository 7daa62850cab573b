"""Frame names torch's Chrome export writes unescaped (torch 2.13 wrote a frame named by three double quotes, a
docstring's line), which leave the trace invalid JSON: each such `"name": ...,` line re-escaped. Standard library only:
the profiled worker imports it (capture.py), and so does the reader (load.py)."""

from __future__ import annotations

import json
import re

NAME_LINE = re.compile(r'^(?P<indent>\s*)"name": "(?P<name>.*)",\s*$')


def repaired(text: str) -> str:
    """`text` with every name line whose string is not valid JSON escaped; every other line as it is."""
    return "\n".join(_escaped(line) for line in text.splitlines())


def _escaped(line: str) -> str:
    match = NAME_LINE.match(line)
    if match is None:
        return line
    try:
        json.loads(f'"{match["name"]}"')
        return line
    except json.JSONDecodeError:
        return f'{match["indent"]}"name": {json.dumps(match["name"])},'
