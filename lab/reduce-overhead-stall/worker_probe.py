"""Which part of a timed leg stalls a reduce-overhead ResNet-50 step by ~4 ms (lab/reduce-overhead-stall/stall_probe.py: never in
one plain process; lab/reduce-overhead-stall/leg_probe.py: in most trials' legs). Run ON THE DEVICE: a candidate worker
(compile_reduce_overhead) timed through the controller's calls in four phases, 16 legs of 3 steps each:
  alone        no other worker exists
  beside       an eager reference worker exists, built and warm, idle
  stopping     the reference stopped (SIGSTOP) around each of the candidate's legs, as timed.leg does
  interleaved  the reference's legs between the candidate's (timed.leg both ways), as ab.interleave does
then beside and interleaved again after the candidate's proof-of-work profile (torch.profiler in its worker).
Prints one JSON line per phase: the candidate's steps (worker's clock, ms), how many over 1.5x the median.
then ab.interleave's own pairs, outputs gated, when a frozen session of the workload is named; then stopping and
interleaved again after the reference's own profile (a bench and a campaign profile the reference before any
candidate: CUPTI then lives in the process that is stopped while the candidate's legs run).
    python3 lab/reduce-overhead-stall/worker_probe.py [WORKLOAD LEVER [FROZEN]]   (default: the conv net, compile_reduce_overhead)"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload import ab
from hyperloom.tools.workload.freeze import describe_target
from hyperloom.tools.workload.gate.frozen import read_frozen, references
from hyperloom.tools.workload.levers import lever
from hyperloom.tools.workload.process import WorkloadProcess
from hyperloom.tools.workload.checks.proof import profiled_work
from hyperloom.tools.workload.timed import draw_seeds, leg, stopped

LEGS, STEPS = 16, 3
workspace = Workspace.from_env()
workload, candidate_lever = sys.argv[1:3] if len(sys.argv) > 2 else ("scripts/device/user_workloads/conv_resnet.py:build",
                                                                     "compile_reduce_overhead")
frozen_name = sys.argv[3] if len(sys.argv) > 3 else None
target = describe_target(workload, [], {}, workspace)
folder = Path(tempfile.mkdtemp())


def report(phase, steps_ms, legs_ms):
    median = statistics.median(steps_ms)
    print(json.dumps({"phase": phase, "median_ms": round(median, 2), "slow_steps": sum(s > 1.5 * median for s in steps_ms),
                      "of": len(steps_ms),
                      "legs_ms": [round(x, 2) for x in legs_ms], "steps_ms": [round(s, 1) for s in steps_ms]}), flush=True)


def phase(name, candidate, base=None, how="plain"):
    steps_ms, legs_ms = [], []
    for _ in range(LEGS):
        seeds = draw_seeds(STEPS) if candidate.info.get("has_inputs") else None
        if how == "interleaved":
            leg(base, STEPS, seeds, None, other=candidate)
            timed = leg(candidate, STEPS, seeds, None, other=base)
            walls, legs_ms = timed.worker_step_s, legs_ms + [timed.step_s * 1e3]
        elif how == "stopping":
            with stopped(base):
                walls = candidate.time(STEPS, seeds=seeds)["wall_s"]
        else:
            walls = candidate.time(STEPS, seeds=seeds)["wall_s"]
        steps_ms += [w * 1e3 for w in walls]
    report(name, steps_ms, legs_ms)


def gated(candidate, base):
    """ab.interleave itself, its pairs' outputs gated against the frozen session's tolerances (as a trial runs them)."""
    frozen = read_frozen(frozen_name, workspace)
    legs = []

    def recorded(process, steps, seeds, where, other=None):
        timed = leg(process, steps, seeds, where, other=other)
        if process is candidate:
            legs.append(timed)
        return timed

    ab.leg = recorded
    run = ab.interleave(base, candidate, LEGS, STEPS, ab.PairGate(frozen.tolerances, references(frozen), folder / "pairs"))
    report(f"gated_pairs (rejected: {run.rejected})", [s * 1e3 for x in legs for s in x.worker_step_s], [x.step_s * 1e3 for x in legs])


with WorkloadProcess(target, [lever(candidate_lever)], folder / "candidate", workspace, 300) as candidate:
    candidate.warmup(3)
    phase("alone", candidate)
    with WorkloadProcess(target, [], folder / "reference", workspace, 300) as base:
        base.warmup(2)
        phase("beside", candidate, base)
        phase("stopping", candidate, base, "stopping")
        phase("interleaved", candidate, base, "interleaved")
        phase("beside_again", candidate, base)
        profiled_work(candidate, folder / "profiled")  # the proof-of-work profile a trial takes before its pairs
        phase("after_profile_beside", candidate, base)
        phase("after_profile_interleaved", candidate, base, "interleaved")
        if frozen_name:
            gated(candidate, base)
        profiled_work(base, folder / "reference_profiled")  # the reference's proof-of-work profile, as a bench takes it first
        phase("after_reference_profile_stopping", candidate, base, "stopping")
        phase("after_reference_profile_interleaved", candidate, base, "interleaved")
    phase("alone_again", candidate)
