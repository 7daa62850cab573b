"""The search space from a spec's `tuning` block, and the content hash that makes a candidate novel."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json

Params = dict[str, str | int]
_DEFINE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DEFINE_VALUE = re.compile(r"[A-Za-z0-9_.+\-]{1,64}")


class Space:
    """Defines and their candidate values, in the spec's order."""

    def __init__(self, tuning: Mapping[str, list[str | int]]) -> None:
        self.values = {name: list(values) for name, values in tuning.items()}

    @property
    def size(self) -> int:
        size = 1
        for values in self.values.values():
            size *= len(values)
        return size if self.values else 0

    def grid(self) -> Iterator[Params]:
        names = list(self.values)
        for combo in itertools.product(*(self.values[n] for n in names)):
            yield dict(zip(names, combo))


def check_params(params: Mapping[str, object]) -> Params:
    """Refuse define names and values that could smuggle flags into the compiler command."""
    clean: Params = {}
    for name, value in params.items():
        if not _DEFINE_NAME.fullmatch(str(name)):
            raise HyperloomError(f"{name!r} is not a preprocessor define name", "use letters, digits and underscores, not starting with a digit")
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not _DEFINE_VALUE.fullmatch(str(value)):
            raise HyperloomError(f"the value {value!r} of {name} is not a plain token", "use an integer or a word of letters, digits, _ . + -")
        clean[str(name)] = value
    return clean


def candidate_hash(identity: str, defines: Mapping[str, str | int]) -> str:
    """Same spec identity (sources, spec, variant, target, shape) and same merged defines: same candidate."""
    return sha256_json({"identity": identity, "defines": {k: str(v) for k, v in defines.items()}})
