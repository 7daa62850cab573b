"""What the workload harness costs per step, against the bare step, measured side by side in one run.

A step of about --step-ms milliseconds (a CPU busy loop; on a GPU, matmuls sized to take that long) is timed three
ways, rounds alternating: bare (the step and a synchronize, timed with perf_counter), through the worker's own step
wrapper (tools/workload/worker/runner.py: synchronize, events, the step context), and through a warm worker process
(WorkloadProcess.time: one call per leg of --steps-per-leg steps, the pipe and JSON included). Target: the
harness adds at most 1 % to a 10 ms step.

    .venv/bin/python bench/workload_overhead.py [--step-ms 10] [--steps-per-leg 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.worker import runner
from hyperloom.tools.workload.process import Target, WorkloadProcess

STEP = '''
import time
def build(step_ms: float = 10.0):
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        a = torch.randn(4096, 4096, device="cuda")
        for _ in range(3):
            a @ a
        torch.cuda.synchronize(); t = time.perf_counter()
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()
        reps = max(1, round(step_ms / 1e3 / ((time.perf_counter() - t) / 20)))
        def step():
            for _ in range(reps):
                a @ a
        return step
    def step():
        end = time.perf_counter() + step_ms / 1e3
        while time.perf_counter() < end:
            pass
    return step
'''


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--step-ms", type=float, default=10.0)
    parser.add_argument("--steps-per-leg", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--legs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "step.py").write_text(STEP)
        workspace = Workspace(root)
        target = Target(f"{root / 'step.py'}:build", "function", (), {"step_ms": str(args.step_ms)})
        runner.build({"workload": target.workload, "kind": "function", "root": str(root), "knobs": target.knobs, "levers": [],
                      "folder": str(root)})
        sync = runner._torch().cuda.synchronize if runner.STATE.gpu else (lambda: None)
        step = runner.STATE.step
        bare, wrapped, worker, calls = [], [], [], []
        with WorkloadProcess(target, [], root / "run", workspace, 120.0) as process:
            process.warmup(2)
            for _ in range(args.rounds):
                for _ in range(args.legs):
                    sync()
                    began = time.perf_counter()
                    for _ in range(args.steps_per_leg):
                        step()
                        sync()
                    bare.append((time.perf_counter() - began) / args.steps_per_leg)
                    began = time.perf_counter()
                    for _ in range(args.steps_per_leg):
                        runner._one_step(events=runner.STATE.gpu)
                    wrapped.append((time.perf_counter() - began) / args.steps_per_leg)
                    began = time.perf_counter()
                    timed = process.time(args.steps_per_leg)
                    calls.append(time.perf_counter() - began - sum(timed["wall_s"]))
                    worker.append(statistics.median(timed["wall_s"]))  # what workload_bench counts for a leg
    b, w, p = statistics.median(bare), statistics.median(wrapped), statistics.median(worker)
    device = "GPU" if runner.STATE.gpu else "CPU"
    print(f"MEASURED on the {device}, {args.rounds} x {args.legs} legs of {args.steps_per_leg} steps, ways alternating; median "
          "seconds per step:")
    print(f"  bare step + synchronize   {b * 1e3:8.3f} ms")
    print(f"  the worker's step wrapper {w * 1e3:8.3f} ms  ({(w - b) / b:+.2%})")
    print(f"  as workload_bench counts it {p * 1e3:6.3f} ms  ({(p - b) / b:+.2%}; the step timed inside its worker process)")
    print(f"  each leg's call to the worker costs {statistics.median(calls) * 1e3:.3f} ms more (pipe, JSON): outside the figure, in the "
          "wall time of a bench")
    print(f"target: the harness adds at most 1 % to a {args.step_ms:g} ms step: {'met' if max(w, p) - b <= 0.01 * b else 'NOT met'}")


if __name__ == "__main__":
    main()
