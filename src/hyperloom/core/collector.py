"""Python's cyclic garbage collector held for a block: its passes cost time proportional to the objects alive, and
land wherever an allocation crosses a threshold (in a timed step, or in the middle of building many objects)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector disabled for the block, enabled again after it where it was on before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
