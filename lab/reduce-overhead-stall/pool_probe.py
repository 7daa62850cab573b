"""Whether Inductor's compile workers, still starting when a compile served from warm caches has ended, stall the
timed legs that follow (run ON THE DEVICE). A first candidate worker compiles the conv net (cold caches) and is
closed; a second compiles it again (warm caches, fast) and is timed at once, 16 legs of 3 steps, then again 20 s
later. Prints one JSON line per phase: the steps (worker's clock, ms), how many over 1.5x the median.
    python3 lab/reduce-overhead-stall/pool_probe.py"""

import json
import statistics
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.freeze import describe_target
from hyperloom.tools.workload.levers import lever
from hyperloom.tools.workload.process import WorkloadProcess
from hyperloom.tools.workload.timed import draw_seeds

workspace = Workspace.from_env()
target = describe_target("scripts/device/user_workloads/conv_resnet.py:build", [], {}, workspace)
folder = Path(tempfile.mkdtemp())


def timed(name, process):
    steps_ms = [w * 1e3 for _ in range(16) for w in process.time(3, seeds=draw_seeds(3))["wall_s"]]
    median = statistics.median(steps_ms)
    print(json.dumps({"phase": name, "median_ms": round(median, 2), "slow_steps": sum(s > 1.5 * median for s in steps_ms),
                      "of": len(steps_ms), "steps_ms": [round(s, 1) for s in steps_ms]}), flush=True)


for turn in ("cold", "warm"):
    with WorkloadProcess(target, [lever("compile_reduce_overhead")], folder / turn, workspace, 300) as candidate:
        began = time.perf_counter()
        candidate.warmup(3)
        print(json.dumps({"phase": f"{turn} warm-up", "s": round(time.perf_counter() - began, 1)}), flush=True)
        timed(f"{turn} at once", candidate)
        if turn == "warm":
            time.sleep(20)
            timed(f"{turn} 20 s later", candidate)
