"""Benchmark: what the gate's checks of the timed launches cost per candidate, in bench and in tune, side by side.

Issue 29's target: at most 10 % more time per candidate with the checks than without. One process runs both legs,
alternating, `--repeat` rounds, on the host CPU's c backend (or a GPU target with --target):
- bench: run_bench of one kernel (stage, gate every input set, time), with the checks (secret sets drawn after the
  build, the last timed launch and a fresh-inputs launch gated, determinism, guards, roof, reference audit) and
  without (the same call with the secret sets' drawing and the audit replaced by stand-ins that draw nothing);
- tune: a session of N candidates with the checks and without (Judging.open replaced by one that judges nothing),
  candidates per hour over the loop's wall time.
The unchecked legs exist only here, to price the checks: no request field turns them off.

Run: .venv/bin/python bench/gate_checks.py [--repeat 3] [--candidates 16] [--target host]
     python3 bench/gate_checks.py --target sm_90    (a GPU: tests/fixtures/cheats/gpu's honest kernel, 1 Mi floats)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench import api as bench_api
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.pipeline.judging import NOTHING, Against
from hyperloom.tools.tune import loop as tune_loop
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TuneRequest

REPO = Path(__file__).resolve().parent.parent
BENCH_SPEC = REPO / "tests" / "fixtures" / "cheats"
TUNE_SPEC = REPO / "tests" / "fixtures" / "specs" / "tune"
GPU_SHAPE = 2  # 1 Mi floats in tests/fixtures/cheats/gpu
TIMING = {"warmup_s": 0.0, "min_reps": 10, "max_reps": 50, "max_time_s": 0.3, "target_ci": 0.05}
TARGET = 0.10


class _NoJudging:
    secret, roof, reference_audit = None, None, None

    @classmethod
    def open(cls, *args: object, **kwargs: object) -> _NoJudging:
        return cls()

    def close(self) -> None:
        pass


@contextlib.contextmanager
def unchecked_bench() -> Iterator[None]:
    real_evaluate = bench_api.evaluate

    def evaluate(launchable, code_object, sets, workspace, plan, against=NOTHING):  # type: ignore[no-untyped-def]
        # no secret sets, no reference audit
        return real_evaluate(launchable, code_object, sets, workspace, plan, Against(roof=against.roof))

    class NothingDrawn:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def get(self) -> None:
            return None

        def close(self) -> None:
            pass

    with mock.patch.object(bench_api, "DrawnMeanwhile", NothingDrawn), mock.patch.object(bench_api, "evaluate", evaluate):
        yield


def bench_once(workspace: Workspace, target: str, checked: bool) -> float:
    gpu = target != "host"
    request = BenchRequest(spec="cheats/gpu" if gpu else "cheats", variant="honest", target=target, shape=GPU_SHAPE if gpu else 0, **TIMING)
    started = time.perf_counter()
    with contextlib.nullcontext() if checked else unchecked_bench():
        result = run_bench(request, workspace)
    assert result.ok, result.summary
    return time.perf_counter() - started


def tune_once(workspace: Workspace, target: str, candidates: int, checked: bool, index: int) -> float:
    gpu = target != "host"
    request = TuneRequest(spec="cheats/gpu" if gpu else "tune", variant="honest" if gpu else None, shape=GPU_SHAPE if gpu else 0,
                          target=target, session=f"gate-{index}-{int(checked)}", strategy="random", max_candidates=candidates,
                          revalidate_pairs=0, sweep_shapes=False, background=False, warmup_s=0.0, min_reps=6, max_reps=30, max_time_s=0.2)
    with contextlib.nullcontext() if checked else mock.patch.object(tune_loop, "Judging", _NoJudging):
        report = run_tune(request, workspace)
    run = json.loads((workspace.root / report.breakdown_json).read_text())["run"]
    return run["loop_wall_s"] / max(run["candidates"], 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--target", default="host")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hyperloom-gate-bench-") as tmp:
        root = Path(tmp)
        shutil.copytree(BENCH_SPEC, root / "cheats")
        shutil.copytree(TUNE_SPEC, root / "tune")
        workspace = Workspace.at(root)
        rows: dict[str, dict[bool, list[float]]] = {"bench": {True: [], False: []}, "tune": {True: [], False: []}}
        bench_once(workspace, args.target, True)  # builds cached, references cached: both legs start warm
        for index in range(args.repeat):
            for checked in ((True, False) if index % 2 == 0 else (False, True)):
                rows["bench"][checked].append(bench_once(workspace, args.target, checked))
                rows["tune"][checked].append(tune_once(workspace, args.target, args.candidates, checked, index))
        print(f"MEASURED on {args.target}, {args.repeat} round(s), legs alternating; seconds per candidate (median):")
        worst = 0.0
        for name, legs in rows.items():
            on, off = statistics.median(legs[True]), statistics.median(legs[False])
            worst = max(worst, on / off - 1)
            print(f"  {name:5s}: with checks {on * 1e3:8.1f} ms, without {off * 1e3:8.1f} ms, +{(on / off - 1):.1%}"
                  f"  (rounds: {', '.join(f'{a / b - 1:+.0%}' for a, b in zip(legs[True], legs[False]))})")
        print(f"target: at most +{TARGET:.0%} per candidate: {'met' if worst <= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
