"""The measured roof a timed result must stay under: a kernel that reports more bytes per second (or flops) than the
device was measured to move is refused as impossible, naming the roof and the figure.

Roofs come from the caller (tune's roof_gbps and roof_tflops) or from the last roofline measurement on a device of
that name (roofline records its ceilings here). The memory roof binds only when the cache was flushed before each
repetition (otherwise the data may come from cache); MARGIN leaves room for a kernel that streams better than the
microbenchmark did.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.figures import significant

MARGIN = 1.10
"""A GPU result is impossible beyond this multiple of the roof (a measured ceiling sits below the datasheet's peak:
docs/decisions.md, The impossible margin)."""
HOST_MARGIN = 4.0
"""A host CPU's roof is coarse: roofline's host microbenchmarks run on one core, a kernel may run on many, and a CPU's
bandwidth moves with the working set and the neighbours' load; only results this far beyond it are impossible."""


@dataclass(frozen=True)
class Roof:
    memory_gbps: float | None
    compute_tflops: float | None
    source: str


UNBOUNDED = Roof(None, None, "no roof: roofline measuring it")


def _key(device: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", device.strip())[:120] or "unnamed"


def record_roof(device: str, memory_gbps: float | None, compute_tflops: float | None, source: str) -> None:
    """Remember the best ceilings roofline measured on `device` (its name as the runtime reports it)."""
    if not device or (memory_gbps is None and compute_tflops is None):
        return
    write_bytes_atomic(cache_dir("roofs") / f"{_key(device)}.json",
                       json.dumps({"device": device, "memory_gbps": memory_gbps, "compute_tflops": compute_tflops,
                                   "source": source}).encode())


def measured_roof(device: str) -> Roof | None:
    """The ceilings last recorded for `device`, or None."""
    path = cache_dir("roofs") / f"{_key(device)}.json"
    try:
        data = json.loads(path.read_text())
        return Roof(data.get("memory_gbps"), data.get("compute_tflops"), str(data.get("source", "roofline")))
    except (OSError, ValueError, AttributeError):
        return None


def impossible(roof: Roof, bytes_moved: int | None, flops: int | None, median_s: float, *, flushed: bool,
               margin: float = MARGIN) -> str | None:
    """Why a median of `median_s` for the declared bytes and flops beats the roof by more than `margin`, or None."""
    if median_s <= 0:
        return f"a median of {median_s} s is not a time"
    if flushed and bytes_moved and roof.memory_gbps:
        gbps = bytes_moved / median_s / 1e9
        if gbps > roof.memory_gbps * margin:
            return (f"{significant(gbps)} GB/s for the declared {bytes_moved} bytes, {margin:g}x the measured memory roof of "
                    f"{significant(roof.memory_gbps)} GB/s ({roof.source}); the kernel cannot have moved those bytes in that time")
    if flops and roof.compute_tflops:
        tflops = flops / median_s / 1e12
        if tflops > roof.compute_tflops * margin:
            return (f"{significant(tflops)} TFLOP/s for the declared {flops} flops, {margin:g}x the measured compute roof of "
                    f"{significant(roof.compute_tflops)} TFLOP/s ({roof.source}); the kernel cannot have done that work in that time")
    return None
