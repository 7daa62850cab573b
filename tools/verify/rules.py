"""expect / forbid rules: an instruction name, a glob, or an @set, with an optional count bound."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.verify.spellings import spelling

_RULE = re.compile(r"^\s*(?P<pattern>[@A-Za-z0-9_.*?\[\]-]+)\s*(?:(?P<op>>=|<=|==|>|<)\s*(?P<count>\d{1,9}))?\s*$")
_OPS: dict[str, Callable[[int, int], bool]] = {">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True)
class Rule:
    text: str
    pattern: str
    op: str
    count: int

    def holds(self, found: int) -> bool:
        return _OPS[self.op](found, self.count)

    @property
    def requirement(self) -> str:
        return f"count {self.op} {self.count}"


def parse_rule(text: str, kind: str) -> Rule:
    """'v_dot8_i32_iu4', 'v_wmma_*>=4', '@dot4_i8'; forbid rules take no bound (they mean count == 0)."""
    match = _RULE.match(text)
    if not match:
        raise HyperloomError(
            f"the {kind} rule {text!r} is not NAME, GLOB or @SET with an optional bound like >=4",
            "write e.g. v_dot8_i32_iu4, v_wmma_*>=2 or @dot4_i8",
        )
    if kind == "forbid":
        if match["op"]:
            raise HyperloomError(f"the forbid rule {text!r} has a bound", "forbid rules mean 'never'; use expect with <=N for a bound")
        return Rule(text, match["pattern"], "==", 0)
    return Rule(text, match["pattern"], match["op"] or ">=", int(match["count"] or 1))


def patterns_for(rule: Rule, target: str) -> tuple[str, ...]:
    if rule.pattern.startswith("@"):
        return spelling(rule.pattern[1:], target)
    return (rule.pattern,)


def matches(mnemonic: str, base: str, patterns: Iterable[str]) -> bool:
    """Whether an instruction (full mnemonic, or its base without encoding suffixes) fits any pattern."""
    return any(fnmatchcase(mnemonic, p) or fnmatchcase(base, p) for p in patterns)
