"""What census.py (the cache) and measure.py (the sweep) share: the digest of the definitions that keys a census, and
the progress steps a census counts."""

from __future__ import annotations

from hyperloom import __version__
from hyperloom.core.hashing import sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.isa.capabilities import CAPABILITIES
from hyperloom.tools.isa.layouts import GENERATIONS, UNSWEPT
from hyperloom.tools.isa.models import FORMAT

STEPS = 4  # sweep, probe, re-assembly, capabilities


def definitions_digest(gen: str) -> str:
    """Changes whenever the layouts, their known gaps, the capability patterns or the format change."""
    return sha256_json(
        [FORMAT, __version__, repr(GENERATIONS[gen]), UNSWEPT, [(c.name, c.description, c.patterns) for c in CAPABILITIES]]
    )


def step(progress: ProgressFn | None, done: int) -> None:
    if progress is not None:
        progress(done, STEPS)
