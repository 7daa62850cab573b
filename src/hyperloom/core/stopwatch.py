"""Seconds spent, by part: what a caller reports as where its time went (a gate's judging, a reference's start)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import perf_counter


@dataclass
class PartClock:
    """Seconds by part, each part's laps added up."""

    parts_s: dict[str, float] = field(default_factory=dict)

    @property
    def spent_s(self) -> float:
        return sum(self.parts_s.values())

    def add(self, part: str, seconds: float) -> None:
        self.parts_s[part] = self.parts_s.get(part, 0.0) + seconds

    @contextmanager
    def timing(self, part: str) -> Iterator[None]:
        """The block's seconds added to `part`, also when it raises."""
        began = perf_counter()
        try:
            yield
        finally:
            self.add(part, perf_counter() - began)
