"""Benchmark: what the tune loop's own work costs two devices, on any machine: one CPU worker against two, with
candidates that nap (device time without CPU time, as a GPU-bound candidate's is for the CPU).

Issue 21's two-GPU target (>= 1.8x the candidates per hour of one GPU) is measured on GPUs (bench/tune_throughput.py
--two-devices); this emulation shows, without a GPU, how far the loop's process (proposing, compiling from the
cache, the gate's comparison, the ledger, handing trials over) keeps a second device waiting. Each candidate of
bench/tune_nap sleeps NAP_US + VARIANT microseconds per launch (10 timed repetitions, three gate launches); the
compile cache is filled first, so both legs read it. Both legs run in this process, one after the other, R times.

Run: .venv/bin/python bench/tune_emulated.py [--candidates 24] [--nap-us 2000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TuneRequest

SPEC = Path(__file__).resolve().parent / "tune_nap"
TIMING = {"warmup_s": 0.0, "min_reps": 10, "max_reps": 10, "max_time_s": 5.0, "target_ci": 1.0, "flush_cache": False,
          "revalidate_pairs": 0, "sweep_shapes": False}


def session(workspace: Workspace, name: str, workers: int, candidates: int) -> dict:
    run_tune(TuneRequest(spec="nap", session=name, strategy="grid", max_candidates=candidates, workers=workers, background=False,
                         timeout_s=30.0, **TIMING), workspace)
    return json.loads((workspace.root / ".hyperloom" / "tune" / name / "breakdown.json").read_text())["run"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--nap-us", type=int, default=2000, help="each launch's nap (the emulated device time), microseconds")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory(prefix="hyperloom-tune-emulated-") as tmp:
        workspace = Workspace(root=Path(tmp))
        shutil.copytree(SPEC, workspace.root / "nap")
        spec = workspace.root / "nap" / "kernel.yaml"
        spec.write_text(spec.read_text().replace("NAP_US: 2000", f"NAP_US: {args.nap_us}"))
        session(workspace, "cache", 1, args.candidates)  # compiles every candidate once: both legs read the cache
        for index in range(args.repeat):
            one = session(workspace, f"one{index}", 1, args.candidates)
            two = session(workspace, f"two{index}", 2, args.candidates)
            ratio = two["candidates_per_hour"] / one["candidates_per_hour"]
            ratios.append(ratio)
            print(f"run {index + 1}: one worker {one['candidates_per_hour']:,.0f} candidates/h, two {two['candidates_per_hour']:,.0f}: "
                  f"{ratio:.2f}x "
                  f"(workers busy {sum(d['busy_s'] for d in two['devices'] if d['device'] != 'compiler') / two['loop_wall_s']:.2f} of 2)")
    print(f"two / one, median of {len(ratios)}: {statistics.median(ratios):.2f}x (MEASURED on this machine's CPUs; napping candidates "
          "emulate GPU-bound ones, no GPU ran)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
