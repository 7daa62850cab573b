"""Timing of torch-side calls (Triton's own launcher kernel[grid](...), torch.compile) exactly as bench times a kernel:
the same write (or read) flush of twice the last-level cache, a device spin behind which the host enqueues the start
event, the call and the end event, and the same stopping rule (hyperloom.tools.runtime.sampling.sample with bench's
Timing defaults). Used by bench/triton_launch.py and bench/triton_outside.py; needs torch and a GPU."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from hyperloom.tools.pipeline.stats import SampleStats, summarize
from hyperloom.tools.runtime.models import Timing
from hyperloom.tools.runtime.sampling import sample

SPIN_CYCLES = 100_000  # about 50 us at an H200's clock, as bench's spin (SPIN_NS = 50 us): longer than a launch's enqueue


def timed(call: Callable[[], object], timing: Timing | None = None) -> SampleStats:
    """Device-event time of `call` per repetition, cache flushed before each, summarized as bench summarizes."""
    timing = timing or Timing()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device="cuda") if timing.flush_cache else None
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    counter = [0]

    def one_rep() -> tuple[float, float]:
        counter[0] += 1
        if flush is not None and timing.flush_mode == "write":
            flush.fill_(counter[0] & 0xFF)
        elif flush is not None:
            flush.max()
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        call()
        end.record()
        end.synchronize()
        kernel_s = start.elapsed_time(end) / 1e3
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        return kernel_s, time.perf_counter() - t0

    kernel, _, _ = sample(one_rep, timing)
    return summarize(kernel)


def host_seconds_per_launch(launch: Callable[[], object], launches: int = 2000) -> float:
    """Host time of one asynchronous launch: `launches` back to back, device work overlapped, divided out."""
    for _ in range(50):
        launch()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        launch()
    elapsed = time.perf_counter() - t0
    torch.cuda.synchronize()
    return elapsed / launches
