"""The search space from a spec's `tuning` block, and the content hash that makes a candidate novel."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json

Params = dict[str, str | int]
_DEFINE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DEFINE_VALUE = re.compile(r"[A-Za-z0-9_.+\-]{1,64}")


VARIANT = "variant"
"""The reserved parameter naming a candidate's variant; absent, the candidate is of the session's own variant."""
SOURCE = "source"
"""The reserved parameter naming a candidate's own source: the sha256 prefix of a file the session stored (tools/tune/sources.py)."""


class Space:
    """Defines and their candidate values, in the spec's order: the session's variant's (`values`), then
    those of each further variant searched (`others`), whose candidates carry VARIANT."""

    def __init__(self, tuning: Mapping[str, list[str | int]], others: Mapping[str, Mapping[str, list[str | int]]] | None = None,
                 variant: str = "") -> None:
        self.variant = variant  # the session's own variant's name (how proposers label its candidates)
        self.values = {name: list(values) for name, values in tuning.items()}
        self.others = {variant: {name: list(values) for name, values in space.items()} for variant, space in (others or {}).items()}

    @property
    def size(self) -> int:
        """Candidates in the space: the own variant's combinations (none without a tuning block: its baseline is
        run anyway), and each further variant's (at least one: its own defines)."""
        return _combinations(self.values, empty=0) + sum(_combinations(space, empty=1) for space in self.others.values())

    def grid(self) -> Iterator[Params]:
        yield from _grid(self.values)
        for variant, space in self.others.items():
            for params in _grid(space):
                yield {VARIANT: variant, **params}


def split_variant(params: Mapping[str, str | int], own: str, searched: Iterable[str]) -> tuple[str, Params]:
    """(the candidate's variant, its other params); a variant the session does not search is refused."""
    searched = list(searched)
    variant = str(params.get(VARIANT, own))
    if variant != own and variant not in searched:
        raise HyperloomError(f"the session does not search variant {variant!r}", f"use one of {[own, *searched]}")
    return variant, {name: value for name, value in params.items() if name != VARIANT}


def _combinations(space: Mapping[str, list[str | int]], empty: int) -> int:
    if not space:
        return empty
    size = 1
    for values in space.values():
        size *= len(values)
    return size


def _grid(space: Mapping[str, list[str | int]]) -> Iterator[Params]:
    names = list(space)
    for combo in itertools.product(*(space[n] for n in names)):
        yield dict(zip(names, combo))


def check_params(params: Mapping[str, object]) -> Params:
    """Refuse define names and values that could smuggle flags into the compiler command."""
    clean: Params = {}
    for name, value in params.items():
        if not _DEFINE_NAME.fullmatch(str(name)):
            raise HyperloomError(f"{name!r} is not a preprocessor define name",
                                 "use letters, digits and underscores, not starting with a digit")
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not _DEFINE_VALUE.fullmatch(str(value)):
            raise HyperloomError(f"the value {value!r} of {name} is not a plain token",
                                 "use an integer or a word of letters, digits, _ . + -")
        clean[str(name)] = value
    return clean


def candidate_hash(identity: str, defines: Mapping[str, str | int]) -> str:
    """Same spec identity (sources, spec, variant, target, shape) and same merged defines: same candidate."""
    return sha256_json({"identity": identity, "defines": {k: str(v) for k, v in defines.items()}})
