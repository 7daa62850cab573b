"""Why did an A/A of a host-drawn ResNet-50 (fp16, batch 64) read 0.90x in device time on the H100? One process times
its eager step with device events: back to back, after a 90 ms idle gap (what a host-side inputs(seed) leaves the GPU),
after the gap with a short matmul spin first, and after one torch.profiler session. Run it twice, in two processes,
to see each process's own pace.

    TEARDOWN_CUPTI=1 python3 lab/gpu-idle-and-process-pace/probe.py
"""

import statistics
import time

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

model = torchvision.models.resnet50().cuda().half().eval()
images = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
square = torch.randn(4096, 4096, device="cuda", dtype=torch.half)


def spin(ms: float) -> None:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for _ in range(4):
            square @ square
        end.record()
        end.synchronize()
        if start.elapsed_time(end) >= ms:
            return


def timed(gap_s: float, spin_ms: float = 0.0, steps: int = 15) -> tuple[float, float, float]:
    """(median, min, max) ms of device time a step, each step after `gap_s` idle and a `spin_ms` spin."""
    seen = []
    for _ in range(steps):
        time.sleep(gap_s)
        if spin_ms:
            spin(spin_ms)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.inference_mode():
            model(images)
        end.record()
        torch.cuda.synchronize()
        seen.append(start.elapsed_time(end))
    return round(statistics.median(seen), 3), round(min(seen), 3), round(max(seen), 3)


for _ in range(5):
    with torch.inference_mode():
        model(images)
print("no gap", timed(0.0))
print("gap 90 ms", timed(0.09))
print("gap 90 ms + 5 ms spin", timed(0.09, 5))
print("gap 90 ms + 20 ms spin", timed(0.09, 20))
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    with torch.inference_mode():
        model(images)
    torch.cuda.synchronize()
print("after one profile, no gap", timed(0.0))
print("after one profile, gap 90 ms", timed(0.09))
