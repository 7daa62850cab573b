"""Why a reduce-overhead compile of ResNet-50 ran at eager pace in some legs of a fresh worker and never in a served
one (results/h200/user-workloads/campaign/README.md, session 20). Run ON THE DEVICE, one fresh process per variant:
    python3 lab/reduce-overhead-stall/reduce_overhead_probe.py fresh          # the compile first in its process
    python3 lab/reduce-overhead-stall/reduce_overhead_probe.py served         # a plain compile and dynamo.reset() first, as a kept worker
    python3 lab/reduce-overhead-stall/reduce_overhead_probe.py marked         # fresh, cudagraph_mark_step_begin() before each step
    TORCH_LOGS=cudagraphs,recompiles python3 lab/reduce-overhead-stall/reduce_overhead_probe.py fresh
Each step as the worker times it (inputs(seed), step, outputs on the host); prints one JSON line with the step times
in ms and how many ran at over 1.5x the median."""

import json
import statistics
import sys
import time

import torch

sys.path.insert(0, "scripts/device/user_workloads")
import conv_resnet  # noqa: E402

variant = sys.argv[1] if len(sys.argv) > 1 else "fresh"
workload = conv_resnet.build()
if variant == "served":
    forward = workload.model.forward
    workload.model.forward = torch.compile(forward)
    workload.step()
    torch._dynamo.reset()
    workload.model.forward = forward
workload.model.forward = torch.compile(workload.model.forward, mode="reduce-overhead")
for _ in range(3):
    workload.step()
times = []
for seed in range(40):
    torch.cuda.synchronize()
    began = time.perf_counter()
    workload.inputs(seed)
    if variant == "marked":
        torch.compiler.cudagraph_mark_step_begin()
    workload.step()
    {name: value.cpu().numpy() for name, value in workload.outputs().items()}
    torch.cuda.synchronize()
    times.append((time.perf_counter() - began) * 1e3)
median = statistics.median(times)
print(json.dumps({"variant": variant, "median_ms": round(median, 2), "slow_steps": sum(t > 1.5 * median for t in times),
                  "steps_ms": [round(t, 2) for t in times]}))
