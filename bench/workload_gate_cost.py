"""Benchmark: the workload gate's share of a candidate's trial, with and without the proof-of-work trace, side by side.

Issue 45's target: the gate at most 15 % of a candidate's time. A candidate whose levers are all the catalog's
(Hyperloom's own code) has its profiled step's ops and kernels counted for engagement only; one that runs code
Hyperloom did not write (an overrides module, a knob) also has the step's work weighed for proof of work (proof.py):
in the worker from the profiler's raw events on a CPU (profile/kineto.py), from the Chrome trace it writes on a GPU.
This prices the difference on a decoder as a user writes it (tests/fixtures/twin/decoder.py: a small Llama-family
model, a plain greedy `generate`, frozen with no tolerance declared): `sdpa_math` benched `--rounds`
times in one process, alternating the catalog's path (`counted`) with the trace forced (`traced`: ab.unreviewed made
to answer yes, as for an overrides module); each round two candidates (the first in the A/A's kept worker, served).
Printed per mode: the median trial, gate and profile seconds and the gate's share. The forced leg exists only here.

Run: .venv/bin/python bench/workload_gate_cost.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload import ab
from hyperloom.tools.workload.api import workload_freeze
from hyperloom.tools.workload.bench import bench_workload
from hyperloom.tools.workload.models import CandidateResult, WorkloadBenchRequest, WorkloadFreezeRequest

DECODER = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "twin" / "decoder.py"
MODES = ("counted", "traced")


def one_round(mode: str, workspace: Workspace) -> list[CandidateResult]:
    """Two sdpa_math candidates benched beside the baseline, the proof-of-work trace forced when `mode` is traced."""
    catalog = ab.unreviewed
    if mode == "traced":
        ab.unreviewed = lambda levers: True  # as if an overrides module were among the levers
    try:
        result = bench_workload(WorkloadBenchRequest(name="decoder", candidates=[["sdpa_math"], ["sdpa_math"]], pairs=5, steps_per_leg=2),
                                workspace)
    finally:
        ab.unreviewed = catalog
    return result.candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gate-cost-"))
    try:
        shutil.copy(DECODER, root / "decoder.py")
        workspace = Workspace.at(root)
        workload_freeze(WorkloadFreezeRequest(workload="decoder.py:build", name="decoder", timeout_s=300), workspace)
        seen: dict[str, list[CandidateResult]] = {mode: [] for mode in MODES}
        for _ in range(args.rounds):
            for mode in MODES:
                seen[mode] += one_round(mode, workspace)
        for mode, results in seen.items():
            trial = statistics.median(r.trial_s or 0.0 for r in results)
            gate = statistics.median(r.gate_s or 0.0 for r in results)
            profile = statistics.median((r.gate_parts_s or {}).get("profile", 0.0) for r in results)
            print(f"{mode:8} {len(results)} trials: trial {trial:.2f} s, gate {gate:.2f} s (profile {profile:.2f} s), "
                  f"gate share {100 * gate / trial:.1f} %, work "
                  f"{'recorded' if all(r.work is not None for r in results) else 'not recorded'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
