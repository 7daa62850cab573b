"""The closest valid name to a misspelled one: what every refusal of an unknown name (an argument, a CLI flag, a lever,
a workload's factory or knob) offers as its next step."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's ratio: 'compil' -> 'compile', '--pairz' -> '--pairs'; 'graph' is not offered for 'fma'


def closest(name: str, names: Iterable[str]) -> str | None:
    """The valid name nearest to `name`, or None when none is near."""
    found = difflib.get_close_matches(name, list(names), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """' (did you mean X?)' for the valid name nearest to `name`, or '' when none is near."""
    near = closest(name, names)
    return f" (did you mean {near}?)" if near is not None else ""
