"""Guard regions: a known pattern before and after every buffer of a launch, checked after it, so that a kernel that
writes outside its buffers (into a neighbour's memory, or past its output's end) is caught."""

from __future__ import annotations

import numpy as np

from hyperloom.tools.runtime.models import GUARD_BYTE


def guarded_host(nbytes: int, guard_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(the whole allocation with its guards filled, the buffer's bytes inside it)."""
    whole = np.full(nbytes + 2 * guard_bytes, GUARD_BYTE, dtype=np.uint8)
    return whole, whole[guard_bytes:guard_bytes + nbytes]


def damaged(name: str, before: np.ndarray, after: np.ndarray) -> str | None:
    """What a kernel wrote into a buffer's guards (the bytes read back before and after it), or None."""
    hit_before = np.flatnonzero(before != GUARD_BYTE)
    hit_after = np.flatnonzero(after != GUARD_BYTE)
    if not hit_before.size and not hit_after.size:
        return None
    parts = []
    if hit_before.size:
        parts.append(f"{before.size - int(hit_before[0])} byte(s) before its start")
    if hit_after.size:
        parts.append(f"up to {int(hit_after[-1]) + 1} byte(s) past its end")
    return f"{name}: the kernel wrote {' and '.join(parts)}"


def host_violations(buffers: dict[str, np.ndarray], guard_bytes: int) -> list[str]:
    """Guard damage of host allocations made by guarded_host (by argument name)."""
    if guard_bytes == 0:
        return []
    found = (damaged(name, whole[:guard_bytes], whole[whole.size - guard_bytes:]) for name, whole in buffers.items())
    return [f for f in found if f is not None]
