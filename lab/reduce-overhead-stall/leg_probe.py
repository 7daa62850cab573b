"""Every step of every timed leg, as the controller's trials take them (run ON THE DEVICE, after a freeze of NAME):
why a reduce-overhead compile of ResNet-50 ran some legs at the eager pace in a fresh worker and none in a served one
(results/h200/user-workloads/campaign/README.md, sessions 19-20). Runs `workload bench` in this process with the
legs recorded (ab.leg wrapped): each step's wall and device time in the worker, the controller's leg, a timestamp.
    python3 lab/reduce-overhead-stall/leg_probe.py NAME fresh|served '["compile_reduce_overhead"]' ... > legs.jsonl
fresh: every candidate in a fresh worker (the spare disabled); served: the A/A's kept worker serves each candidate.
One JSON line per leg, then one per candidate's verdict."""

import json
import sys
import time

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload import ab, bench, spare
from hyperloom.tools.workload.models import WorkloadBenchRequest

name, mode, candidates = sys.argv[1], sys.argv[2], [json.loads(c) for c in sys.argv[3:]]
began = time.perf_counter()
timed_leg = ab.leg


def recorded(process, steps, seeds, folder, other=None):
    result = timed_leg(process, steps, seeds, folder, other=other)
    print(json.dumps({"t_s": round(time.perf_counter() - began, 2), "pid": process.pid, "turn": process.served,
                      "levers": [lever.name for lever in process.levers], "leg_ms": round(result.step_s * 1e3, 3),
                      "steps_ms": [round(s * 1e3, 3) for s in result.worker_step_s],
                      "device_ms": [round(s * 1e3, 3) for s in result.device_s]}), flush=True)
    return result


ab.leg = recorded
if mode == "fresh":
    bench.Spare = lambda: spare.Spare(enabled=False)
request = WorkloadBenchRequest(name=name, candidates=candidates, pairs=8, steps_per_leg=3, timeout_s=300)
result = bench.bench_workload(request, Workspace.from_env())
for candidate in [result.same_work, *result.candidates]:
    print(json.dumps({"verdict": candidate.verdict, "levers": candidate.levers, "speedup": candidate.speedup, "turn": candidate.worker_turn,
                      "reason": candidate.reason[:200]}), flush=True)
