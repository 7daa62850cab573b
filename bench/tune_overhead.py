"""Benchmark: tune's own cost on the c backend, and what a second CPU worker buys.

Targets (issue 8): loop overhead per candidate, excluding compile and run, at most 50 ms; two
workers at least 1.7x the candidates per hour of one, on CPU-bound candidates.

Overhead per candidate = session wall time / candidates - (compile seconds + worker-process
seconds) per candidate, with every build already cached so compile is a cache hit. What remains
is the loop itself: proposing, hashing, the in-process gate on frozen references, the ledger,
scratch folders. Worker-process seconds include Python's start-up in each worker (about 0.1 s),
which is the runtime's cost, not the loop's; it is printed separately.

Run: .venv/bin/python bench/tune_overhead.py [--candidates N] [--pairs P] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from hyperloom.core.workspace import Workspace
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TuneRequest

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "specs" / "tune"
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 6, "target_ci": 1.0, "flush_cache": False, "revalidate_pairs": 0,
         "sweep_shapes": False}


CREATED: list[Path] = []


def workspace_with(values: list[int], adversarial: bool) -> Workspace:
    root = Path(tempfile.mkdtemp(prefix="hyperloom-tune-bench-"))
    CREATED.append(root)
    shutil.copytree(FIXTURE, root / "tune")
    spec = yaml.safe_load((root / "tune" / "kernel.yaml").read_text())
    spec["tuning"] = {"REPEAT": values}
    spec["variants"]["host"]["defines"] = {"REPEAT": values[0]}
    if not adversarial:
        spec["adversarial"] = []
    (root / "tune" / "kernel.yaml").write_text(yaml.safe_dump(spec))
    return Workspace(root)


def session(workspace: Workspace, name: str, **fields) -> tuple[float, list]:
    started = time.perf_counter()
    report = run_tune(TuneRequest(spec="tune", session=name, background=False, **{**QUICK, **fields}), workspace)
    trials = sorted(report.leaderboard + report.rejected, key=lambda t: t.seq)
    return time.perf_counter() - started, trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=12)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved 1-worker/2-worker session pairs; the median ratio is the figure")
    parser.add_argument("--repeat", type=int, default=2000, help=(
        "REPEAT of the first throughput candidate (about 10 ms a call at 2000): more makes each candidate's own CPU work"
        " outweigh its workers' Python start-up"))
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="hyperloom-tune-bench-cache-"))
    os.environ["HYPERLOOM_CACHE_DIR"] = str(cache)
    CREATED.append(cache)
    try:
        measure(args.candidates, args.pairs, args.repeat)
    finally:
        for folder in CREATED:
            shutil.rmtree(folder, ignore_errors=True)


def measure(candidates: int, pairs: int, repeat: int) -> None:
    # 1. Overhead: tiny candidates (REPEAT 1..N on 4096 floats), builds cached by a first session.
    ws = workspace_with(list(range(1, candidates + 1)), adversarial=True)
    session(ws, "warm", shape=1)
    wall, trials = session(ws, "measure", shape=1)
    n = len(trials)
    compile_s = sum(t.compile_s for t in trials)
    device_s = sum(t.device_s for t in trials)
    overhead_ms = (wall - compile_s - device_s) / n * 1e3
    print(f"loop overhead per candidate (excluding compile and run): {overhead_ms:.1f} ms  [target <= 50 ms]")
    print(f"  {n} candidates in {wall:.2f} s; compile {compile_s / n * 1e3:.1f} ms and worker processes {device_s / n * 1e3:.0f} ms per "
          "candidate (3 launches each: 2 input sets + timing)")

    # 2. Throughput: CPU-bound candidates (REPEAT 2000.. by default: about 10 ms a call on 65536 floats, 6 timed reps), one worker
    # against two in interleaved pairs (which goes first alternates), so drift in the machine's load hits both sides.
    values = list(range(repeat, repeat + candidates))
    ratios = []
    for pair in range(pairs):
        rates = {workers: throughput(values, workers) for workers in ((1, 2) if pair % 2 == 0 else (2, 1))}
        ratios.append(rates[2] / rates[1])
        print(f"pair {pair + 1}: 1 worker {rates[1]:.0f} candidates/hour, 2 workers {rates[2]:.0f}: {ratios[-1]:.2f}x")
    print(f"2 workers / 1 worker: median {statistics.median(ratios):.2f}x of {pairs} pairs ({min(ratios):.2f}-{max(ratios):.2f}x)"
          f"  [target >= 1.7x] on {os.cpu_count()} CPUs")


def throughput(values: list[int], workers: int) -> float:
    """Candidates per hour of one session over `values` with `workers` CPU workers, every build cached first."""
    ws = workspace_with(values, adversarial=False)
    session(ws, "warm", workers=workers, max_time_s=0.05, max_candidates=len(values))  # compile everything first
    wall, trials = session(ws, "measure", workers=workers, max_time_s=1.0)
    return len(trials) / wall * 3600


if __name__ == "__main__":
    main()
