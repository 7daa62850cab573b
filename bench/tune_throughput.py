"""Benchmark: tune's search throughput, the old loop against the new one, and one device against two.

Issue 21's targets. The same session (spec, space, strategy, seed, candidates, gate, timing settings)
runs in one process twice:
- default: the old loop (worker_mode fresh: a new worker process for every launch, compile_ahead 0:
  each candidate compiled when a device is free for it) against the new one (worker_mode warm,
  compile_ahead auto). Target on the H200: >= 3x the candidates per hour, with identical PASS/WRONG
  verdicts per candidate and medians within noise.
- --two-devices: the new loop on one device against two (GPUs: --devices D0 D1; c backend: two CPU
  workers). Target on two H200s: >= 1.8x the candidates per hour.
Each leg gets the same cache state: --cache cold gives each leg an empty cache of its own (every
candidate compiled in the leg, as overnight); --cache warm compiles every candidate of the space once
first and lets both legs read that cache (only the devices' work is compared). Default: cold for the
old/new comparison, warm for --two-devices. Candidates per hour count the search loop's wall time
(proposing to the last verdict); session set-up (inputs, frozen references) is printed beside it.
Both legs' phase breakdowns (breakdown.json's run) are printed. The verdict and median comparison is
per candidate (its parameters): a strategy that learns from results (tpe) may propose other candidates
when compiles run ahead, so the default strategy is random (a fixed order for a seed).

Run (CPU, c backend, for CI smoke and a local figure):
  .venv/bin/python bench/tune_throughput.py [--candidates 16] [--two-devices]
Run (CUDA GPU, the issue's case; sm_90; --repeat N: N rounds, the legs alternating, judged on the median ratio):
  python3 bench/tune_throughput.py --backend cuda --out tune_throughput.json
  python3 bench/tune_throughput.py --backend cuda --two-devices --devices 0 1 --candidates 48 --out tune_throughput_2gpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.build import build_with, timing_kernels
from hyperloom.tools.pipeline.launch import prepare
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TrialRecord, TuneRequest
from hyperloom.tools.pipeline.phases import PHASES
from hyperloom.tools.tune.space import Space

REPO = Path(__file__).resolve().parent.parent
CPU_FIXTURE = REPO / "tests" / "fixtures" / "specs" / "tune"
GPU_SPEC = "decode/w4a16_tiled"
GPU_VARIANTS = ["mma", "mma_async", "mma_async4"]
CPU_TIMING = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 50, "max_time_s": 0.2, "target_ci": 0.05, "flush_cache": False}
TARGET_OLD_NEW, TARGET_TWO_DEVICES = 3.0, 1.8
NOISE_FLOOR = 0.03
"""Two medians of one candidate differ beyond noise when they are further apart than their 95 % CIs and 3 % (a GPU's clocks
and a shared host's load move a median between runs by more than a run's own CI says)."""


def setup(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The workspace's spec and the session request both legs share (worker mode, ahead and devices are the legs')."""
    if args.backend == "c":
        shutil.copytree(CPU_FIXTURE, root / "tune")
        spec = yaml.safe_load((root / "tune" / "kernel.yaml").read_text())
        values = list(range(1, args.candidates + 1))  # REPEAT r: about r x 8 us on 65536 floats; the baseline is REPEAT 1
        spec["tuning"], spec["variants"]["host"]["defines"] = {"REPEAT": values}, {"REPEAT": values[0]}
        (root / "tune" / "kernel.yaml").write_text(yaml.safe_dump(spec))
        return {"spec": "tune", "target": "host", "shape": 0, **CPU_TIMING}
    shutil.copytree(REPO / "kernels" / "decode", root / "decode")
    return {"spec": GPU_SPEC, "variant": args.variants[0], "search_variants": args.variants[1:], "target": args.target, "shape": args.shape}


def request_for(base: dict[str, Any], args: argparse.Namespace, session: str, **leg: Any) -> TuneRequest:
    return TuneRequest(**{**base, "session": session, "strategy": args.strategy, "seed": args.seed, "max_candidates": args.candidates,
                          "budget_device_s": 30 * 86400, "revalidate_pairs": 0, "sweep_shapes": False, "background": False,
                          "timeout_s": args.timeout_s, **leg})


def precompile(workspace: Workspace, base: dict[str, Any], threads: int) -> tuple[int, int]:
    """Compile every candidate of the space (each searched variant's tuning grid, and the baseline) into the current cache;
    (builds that succeeded, builds tried)."""
    loaded = load_spec(workspace.resolve(base["spec"]), workspace)
    variants = [base.get("variant"), *base.get("search_variants", [])]
    jobs = []
    for name in variants:
        launchable = prepare(loaded, name, base["target"], base["shape"])
        jobs += [(launchable, params) for params in [{}, *Space(loaded.spec.tuning_of(launchable.variant)).grid()]]
    if base["target"] != "host":
        timing_kernels(base["target"], workspace)
    def build(job: tuple) -> bool:  # type: ignore[type-arg]
        try:
            return build_with(job[0], workspace, job[1])[1].ok
        except HyperloomError:  # a candidate the session will record as COMPILE_ERROR
            return False

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(build, jobs)), len(jobs)


def leg(workspace: Workspace, cache: Path, request: TuneRequest) -> dict[str, Any]:
    """One session in `cache`; its figures, its trials and its run breakdown."""
    os.environ["HYPERLOOM_CACHE_DIR"] = str(cache)
    started = time.perf_counter()
    report = run_tune(request, workspace)
    wall_s = time.perf_counter() - started
    folder = workspace.root / ".hyperloom" / "tune" / request.session  # type: ignore[operator]
    breakdown = json.loads((folder / "breakdown.json").read_text())
    run = breakdown["run"]
    trials = [TrialRecord.model_validate(t) for t in breakdown["trials"]]
    return {"session": request.session, "worker_mode": request.worker_mode, "compile_ahead": run["compile_ahead"], "slots": run["slots"],
            "session_wall_s": wall_s, "loop_wall_s": run["loop_wall_s"], "candidates": len(trials),
            "candidates_per_hour": run["candidates_per_hour"],
            "counts": breakdown["counts"], "run": run, "best": report.status.best.model_dump() if report.status.best else None,
            "trials": [{"hash": t.hash, "params": t.params, "status": t.status, "median_s": t.median_s, "ci_halfwidth_s": t.ci_halfwidth_s,
                        "device_index": t.device_index, "worker": t.worker} for t in trials]}


def compare(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Per candidate (its params: a hash also covers the session's folder) in both legs: same status? For those both passed,
    the medians' ratio and whether they differ beyond noise (NOISE_FLOOR)."""
    a, b = ({json.dumps(t["params"], sort_keys=True): t for t in leg_["trials"]} for leg_ in (first, second))
    common = [h for h in a if h in b]
    differ = [{"params": a[h]["params"], "first": a[h]["status"], "second": b[h]["status"]} for h in common
              if a[h]["status"] != b[h]["status"]]
    ratios, apart = [], []
    for h in common:
        x, y = a[h], b[h]
        if x["median_s"] and y["median_s"]:
            ratios.append(y["median_s"] / x["median_s"])
            allowed = (x["ci_halfwidth_s"] or 0) + (y["ci_halfwidth_s"] or 0) + NOISE_FLOOR * min(x["median_s"], y["median_s"])
            if abs(x["median_s"] - y["median_s"]) > allowed:
                apart.append({"params": x["params"], "first_us": x["median_s"] * 1e6, "second_us": y["median_s"] * 1e6})
    return {"common": len(common), "only_first": len(a) - len(common), "only_second": len(b) - len(common), "status_differs": differ,
            "median_ratios": ratios, "median_abs_diff_pct": 100 * statistics.median(abs(r - 1) for r in ratios) if ratios else None,
            "max_abs_diff_pct": 100 * max(abs(r - 1) for r in ratios) if ratios else None, "ci_apart": apart}


def print_leg(name: str, figures: dict[str, Any]) -> None:
    run = figures["run"]
    print(f"{name}: {figures['candidates']} candidates in {figures['loop_wall_s']:.1f} s of search -> {figures['candidates_per_hour']:.0f} "
          f"candidates/hour (worker mode {figures['worker_mode']}, compile ahead {figures['compile_ahead']}, on "
          f"{', '.join(figures['slots'])}; session {figures['session_wall_s']:.1f} s with set-up); verdicts {figures['counts']}")
    per = run["phases_per_candidate_s"]
    total = sum(per.values()) or 1.0
    print("  per candidate: " + ", ".join(f"{p} {per.get(p, 0.0) * 1e3:.0f} ms ({per.get(p, 0.0) / total:.0%})" for p in PHASES))
    print("  devices: " + "; ".join(f"{d['device']} {d['candidates']} candidates, busy {d['busy_s']:.1f} s ({d['busy_share'] or 0:.0%} of "
                                    "the search)" for d in run["devices"]))
    for workers in run["workers"]:
        print(f"  workers: {workers.get('launches', 0)} launches in {workers.get('processes_started', 0)} processes, "
              f"{workers.get('start_s', 0.0):.2f} s starting warm ones, replaced {workers.get('replaced') or 'never'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--backend", choices=["c", "cuda", "hip"], default="c",
                        help="c: the host fixture on CPU workers; cuda/hip: the decode spec on GPUs")
    parser.add_argument("--target", default="sm_90", help="GPU target (cuda: sm_XX, hip: gfxNNN)")
    parser.add_argument("--variants", nargs="+", default=GPU_VARIANTS,
                        help="GPU: the session's variant, then the further variants searched")
    parser.add_argument("--shape", type=int, default=3, help="GPU: the spec's shape index (3: 28672 x 8192)")
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--strategy", default="random", choices=["random", "grid", "tpe", "cmaes"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--two-devices", action="store_true",
                        help="one device against two (the new loop in both legs) instead of old against new")
    parser.add_argument("--devices", type=int, nargs="+", default=[0, 1],
                        help="GPUs: the first is the one-device leg's, the first two the two-device leg's")
    parser.add_argument("--cache", choices=["cold", "warm"], default=None, help="default: cold for old/new, warm for --two-devices")
    parser.add_argument("--compile-ahead", type=int, default=None, help="the new loop's compile_ahead (default auto)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of both legs (the order alternating); the target is judged on the median ratio")
    parser.add_argument("--out", type=Path, default=None, help="write every figure and trial as JSON here")
    args = parser.parse_args()
    cache_mode = args.cache or ("warm" if args.two_devices else "cold")
    root = Path(tempfile.mkdtemp(prefix="hyperloom-tune-throughput-"))
    try:
        os.environ["HYPERLOOM_WORKSPACE"] = str(root)
        os.chdir(root)
        workspace = Workspace(root)
        base = setup(root, args)
        gpu = args.backend != "c"
        one = {"devices": args.devices[:1]} if gpu else {"workers": 1}
        if args.two_devices:
            legs = [("one device", {**one, "worker_mode": "warm", "compile_ahead": args.compile_ahead}),
                    ("two devices", {**({"devices": args.devices[:2]} if gpu else {"workers": 2}), "worker_mode": "warm",
                                     "compile_ahead": args.compile_ahead})]
            target, label = TARGET_TWO_DEVICES, "two devices / one"
        else:
            legs = [("old (fresh, compile inline)", {**one, "worker_mode": "fresh", "compile_ahead": 0}),
                    ("new (warm, compile ahead)", {**one, "worker_mode": "warm", "compile_ahead": args.compile_ahead})]
            target, label = TARGET_OLD_NEW, "new / old"
        warm_cache = root.parent / f"{root.name}-cache-warm"
        if cache_mode == "warm":
            os.environ["HYPERLOOM_CACHE_DIR"] = str(warm_cache)
            started = time.perf_counter()
            built, tried = precompile(workspace, base, max(1, min(32, os.cpu_count() or 1)))
            print(f"cache warm: {tried} candidate builds ({built} succeeded) in {time.perf_counter() - started:.1f} s before either leg",
                  flush=True)
        print(f"{args.backend}: spec {base['spec']}, shape {base['shape']}, strategy {args.strategy} seed {args.seed}, {args.candidates} "
              f"candidates a leg, cache {cache_mode}", flush=True)
        rounds = []
        for repeat in range(args.repeat):  # later rounds alternate the legs' order: a drift of the machine favours neither
            order = list(enumerate(legs)) if repeat % 2 == 0 else list(reversed(list(enumerate(legs))))
            results: dict[int, dict[str, Any]] = {}
            for index, (name, fields) in order:
                cache = warm_cache if cache_mode == "warm" else root.parent / f"{root.name}-cache-{repeat}-{index}"
                figures = leg(workspace, cache, request_for(base, args, f"r{repeat}leg{index}", **fields))
                print_leg(name, figures)
                results[index] = {"leg": name, **figures}
            ratio = results[1]["candidates_per_hour"] / results[0]["candidates_per_hour"]
            same = compare(results[0], results[1])
            print(f"{label}: {ratio:.2f}x candidates per hour" + (f" (round {repeat + 1} of {args.repeat})" if args.repeat > 1 else
                  f"  [target >= {target:g}x: {'met' if ratio >= target else 'NOT met'}]"))
            print(f"verdicts: {same['common']} candidates in both legs ({same['only_first']} only in the first, {same['only_second']} only "
                  "in the second); "
                  + ("identical" if not same["status_differs"] else f"{len(same['status_differs'])} DIFFER: {same['status_differs']}"))
            if same["median_ratios"]:
                print(f"medians of candidates passing in both: |second/first - 1| median {same['median_abs_diff_pct']:.1f} %, max "
                      f"{same['max_abs_diff_pct']:.1f} %; {len(same['ci_apart'])} of {len(same['median_ratios'])} further apart than their "
                      f"95 % CIs and {NOISE_FLOOR:.0%}", flush=True)
            rounds.append({"ratio": ratio, "comparison": same, "legs": [results[0], results[1]]})
        ratios = [r["ratio"] for r in rounds]
        ratio = statistics.median(ratios)
        if args.repeat > 1:
            print(f"{label}, median of {len(ratios)} rounds: {ratio:.2f}x (rounds {', '.join(f'{r:.2f}x' for r in ratios)})  "
                  f"[target >= {target:g}x: {'met' if ratio >= target else 'NOT met'}; every round: "
                  f"{'yes' if min(ratios) >= target else 'no'}]")
        if args.out:
            args.out.write_text(json.dumps({"backend": args.backend, "cache": cache_mode, "strategy": args.strategy, "seed": args.seed,
                                            "request": base, "ratio": ratio, "target": target, "comparison": rounds[0]["comparison"],
                                            "legs": rounds[0]["legs"], "rounds": rounds, "python": sys.version}, indent=1, default=str))
        return 0
    finally:
        for folder in (root, *root.parent.glob(f"{root.name}-cache-*")):
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
