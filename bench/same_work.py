"""How often workload bench calls a candidate that does the baseline's own work FASTER, with the noise band the A/A
trial sets (what bench does) and with the fixed band alone (what it did), judged from the same legs in one run.

A small torch MLP (--repeat forward passes a step) is frozen; each round is one workload bench call with
--same candidates whose knobs equal the baseline's and one that does a quarter less work (repeat - 1 of repeat
passes: a true gain of about repeat / (repeat - 1)). --load N starts N busy-loop processes for the run, as a loaded
machine has (a full test suite, another user). Printed per round: the A/A's ratio and the band it set; at the end,
same-work candidates called FASTER under each rule, and how often the less-work one was found.

    .venv/bin/python bench/same_work.py [--rounds 3] [--same 4] [--pairs 8] [--load 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.ab import judge
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest

WORKLOAD = '''
import torch


class Mlp:
    def __init__(self, repeat):
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
        self.x = torch.randn(256, 256)
        self.repeat = repeat

    def step(self):
        with torch.inference_mode():
            for _ in range(self.repeat):
                self.y = self.model(self.x)

    def outputs(self):
        return {"y": self.y}


def build(repeat: int = 4):
    torch.set_num_threads(1)
    return Mlp(repeat)
'''
FIXED_BAND = 0.02


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--same", type=int, default=4, help="same-work candidates a round")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--load", type=int, default=1, help="busy-loop processes beside the run")
    args = parser.parse_args()
    load = [multiprocessing.Process(target=_busy, args=(3600.0,), daemon=True) for _ in range(args.load)]
    for process in load:
        process.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "mlp.py").write_text(WORKLOAD)
            ws = Workspace(root)
            workload_freeze(WorkloadFreezeRequest(workload="mlp.py:build", name="mlp", knobs={"repeat": str(args.repeat)}, atol=1e-5,
                                                  rtol=1e-5, timeout_s=120), ws)
            same_calibrated = same_fixed = same_total = found = 0
            for index in range(args.rounds):
                candidates = [[f"knob:repeat={args.repeat}"]] * args.same + [[f"knob:repeat={args.repeat - 1}"]]
                result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=candidates, pairs=args.pairs, steps_per_leg=2,
                                                             warmup_steps=1, max_baseline_legs=6, timeout_s=120.0), ws)
                aa = result.same_work
                print(f"round {index}: A/A {aa.speedup:.3f}x ({aa.candidate_faster}/{aa.pairs} pairs), band {result.noise_band:.3f}")
                for candidate in result.candidates:
                    fixed = judge(candidate.levers, candidate.baseline_legs_s, candidate.candidate_legs_s, None, FIXED_BAND, [], [],
                                  0.0).verdict
                    print(f"  {candidate.levers[0]}: {candidate.speedup:.3f}x ({candidate.candidate_faster}/{candidate.pairs}); "
                          f"with the A/A band {candidate.verdict}, with {FIXED_BAND:.0%} alone {fixed}")
                    if candidate is result.candidates[-1]:
                        found += candidate.verdict == "FASTER"
                    else:
                        same_total += 1
                        same_calibrated += candidate.verdict == "FASTER"
                        same_fixed += fixed == "FASTER"
            print(f"same-work candidates called FASTER: {same_calibrated} of {same_total} with the A/A band, {same_fixed} of {same_total} "
                  f"with {FIXED_BAND:.0%} alone (MEASURED here, {args.load} busy process(es) beside); "
                  f"the less-work candidate found FASTER in {found} of {args.rounds} rounds")
    finally:
        for process in load:
            process.terminate()


if __name__ == "__main__":
    main()
