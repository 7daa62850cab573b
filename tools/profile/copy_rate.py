"""The device's copy bandwidth, measured in the process that was just profiled: what a decode token's bytes roof is
read against (docs/decisions.md: The decode levers). A device-to-device copy reads and writes each byte once, so
its rate is the bandwidth a memory-bound kernel can reach on this part, measured on it, not the datasheet's peak.

Runs in a worker (torch imported there); on a GPU only. The buffer is at most COPY_BYTES and at most a quarter of the
free device memory (two buffers of it), so a profiled model that fills the device is left room; below MIN_BYTES the
measure is skipped (a small copy times its launch, not the memory) and the reason returned instead."""

from __future__ import annotations

import statistics
from typing import Any

COPY_BYTES = 1 << 30  # 1 GiB each way: far past any last-level cache (the H200's L2 is 60 MiB, MI300X's Infinity Cache 256 MiB)
MIN_BYTES = 256 << 20  # under this the copy may run from a cache the size of MI300X's
REPEATS = 10
WARMUP = 2


def device_copy(torch: Any) -> dict[str, Any]:
    """{"copy_gb_s", "copy_bytes", "repeats"} from copies of one device buffer into another timed by device events
    (the median of REPEATS after WARMUP, bytes read plus written over it), or {"copy_skipped": why}."""
    if not torch.cuda.is_available():
        return {"copy_skipped": "no GPU in the profiled process"}
    free_bytes, _ = torch.cuda.mem_get_info()
    size = min(COPY_BYTES, free_bytes // 4) // 4096 * 4096
    if size < MIN_BYTES:
        return {"copy_skipped": f"{free_bytes / 2**20:.0f} MiB free on the device after the profile; the copy needs 2 x "
                                f"{MIN_BYTES >> 20} MiB at least"}
    try:
        source = torch.empty(size, dtype=torch.uint8, device="cuda")
        target = torch.empty_like(source)
    except RuntimeError as exc:  # another process took the memory between the query and the allocation
        return {"copy_skipped": f"the copy's buffers could not be allocated ({str(exc).splitlines()[0][:160]})"}
    times_ms = []
    for _ in range(WARMUP + REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        times_ms.append(start.elapsed_time(end))
    del source, target
    torch.cuda.empty_cache()
    median_ms = statistics.median(times_ms[WARMUP:])
    return {"copy_gb_s": 2 * size / (median_ms * 1e6), "copy_bytes": int(size), "repeats": REPEATS}
