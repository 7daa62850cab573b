"""Does a workload bench time the model or the harness? The CPU case of issue 66: a step of a few milliseconds behind
inputs(seed) that draws about 10 ms of random numbers on the host (tests/fixtures/host_inputs/host_drawn.py), and an
honest rewrite of the step (all rows in one call, the same work) several times faster when timed by hand.

Prints, in one run on this machine: the step timed by hand in this process (the baseline and the rewrite, their ratio);
inputs(seed) timed by hand; then `workload bench` on the same workload: its baseline figure, its inputs figure, the
rewrite's speedup against the hand-timed ratio (target: at least half of it), and the same work moved into what
inputs(seed) calls (target: not FASTER). MEASURED on this host's CPU.

    .venv/bin/python bench/host_inputs.py [--pairs 6]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "host_inputs"
REPEATS = 15


def by_hand(rows_at_once: int) -> tuple[float, float]:
    """(the median of REPEATS steps, the median of REPEATS inputs(seed)), seconds, in this process."""
    module = importlib.import_module("host_drawn")
    work = module.build(rows_at_once)
    steps, draws = [], []
    for seed in range(REPEATS + 2):
        began = time.perf_counter()
        work.inputs(seed)
        drawn = time.perf_counter()
        work.step()
        done = time.perf_counter()
        if seed >= 2:  # two warm-up steps
            draws.append(drawn - began)
            steps.append(done - drawn)
    return statistics.median(steps), statistics.median(draws)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args()
    sys.path.insert(0, str(FIXTURES))
    base_s, draw_s = by_hand(1)
    rewrite_s, _ = by_hand(32)
    direct = base_s / rewrite_s

    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.workload.api import workload_bench, workload_freeze
    from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest

    with tempfile.TemporaryDirectory(prefix="host-inputs-") as root:
        for name in ("host_drawn.py", "moved_into_inputs.py"):
            shutil.copy(FIXTURES / name, Path(root) / name)
        workspace = Workspace(Path(root))
        workload_freeze(WorkloadFreezeRequest(workload="host_drawn.py:build", name="host", atol=1e-5, rtol=1e-5, timeout_s=300), workspace)
        result = workload_bench(WorkloadBenchRequest(name="host", candidates=[["knob:rows_at_once=32"], ["overrides:moved_into_inputs.py"]],
                                                     pairs=args.pairs, timeout_s=300), workspace)
    rewrite, moved = result.candidates
    print("MEASURED on this host's CPU, one process each (torch, one thread):")
    print(f"  by hand: the step {base_s * 1e3:.3g} ms, the rewrite {rewrite_s * 1e3:.3g} ms ({direct:.3g}x); inputs(seed) "
          f"{draw_s * 1e3:.3g} ms")
    print(f"  workload bench: baseline {result.baseline.median_s * 1e3:.3g} ms a step ({result.figure}), inputs(seed) "
          f"{(result.baseline_inputs_step_s or 0) * 1e3:.3g} ms a step outside it; A/A {result.same_work.speedup:.3g}x, band "
          f"{result.noise_band:.1%}")
    share = (rewrite.speedup or 0) / direct
    print(f"  the rewrite: {rewrite.verdict} {rewrite.speedup or 0:.3g}x, {share:.0%} of its hand-timed ratio "
          f"(target >= 50 %: {'met' if rewrite.verdict == 'FASTER' and share >= 0.5 else 'NOT met'})")
    print(f"  the work moved into inputs(seed): {moved.verdict} (target: not FASTER: {'met' if moved.verdict != 'FASTER' else 'NOT met'}); "
          f"{moved.reason[:160]}")


if __name__ == "__main__":
    main()
