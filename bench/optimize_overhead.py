"""What an optimize campaign costs on its own, per candidate: the CPU time of the process that drives it (freeze,
ledger, lever checks, A/B bookkeeping, judging, the report), apart from the workers that run the workload.

A tiny workload (a busy loop of --step-ms, so the workers' own cost is small and known) declares a knob with
--candidates values that change nothing; each `knob:variant=vN` is one candidate, gated and A/B-timed beside the
baseline (none is faster, none is kept, so every candidate costs the same). The driver's CPU time is
time.process_time() around run_campaign (this process only: its threads, not its worker processes); the workers'
is the ledger's device seconds. Printed: both per candidate, and the driver's share of the campaign's wall time.

    .venv/bin/python bench/optimize_overhead.py [--candidates 8] [--step-ms 2] [--pairs 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.api import optimize_report, run_campaign
from hyperloom.tools.optimize.models import OptimizeRef, OptimizeRequest

WORKLOAD = '''
import time
from typing import Literal


class Busy:
    def __init__(self, step_ms):
        self.step_ms, self.y = step_ms, None

    def step(self):
        end = time.perf_counter() + self.step_ms / 1e3
        while time.perf_counter() < end:
            pass
        self.y = [1.0, 2.0, 3.0]

    def outputs(self):
        return {{"y": self.y}}


def build(variant: Literal[{values}] = "v0", step_ms: float = 2.0):
    return Busy(step_ms)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps-per-leg", type=int, default=2)
    args = parser.parse_args()
    values = [f"v{i}" for i in range(args.candidates + 1)]
    with tempfile.TemporaryDirectory(prefix="hyperloom-optimize-overhead-") as tmp:
        root = Path(tmp)
        (root / "busy.py").write_text(WORKLOAD.format(values=", ".join(repr(v) for v in values)))
        workspace = Workspace(root)
        request = OptimizeRequest(workload="busy.py:build", session="busy", knobs={"step_ms": str(args.step_ms)}, levers=[f"knob:variant={v}" for v in values[1:]],
                                  pairs=args.pairs, steps_per_leg=args.steps_per_leg, timeout_s=120.0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        run_campaign(request, workspace)
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        report = optimize_report(OptimizeRef(session="busy"), workspace)
    tried = [r for r in report.records if r.phase == "levers"]
    device_s = sum(r.device_s for r in report.records)
    if not tried:
        raise SystemExit(f"no candidate was timed: {report.status.summary}")
    print(f"MEASURED on this machine's CPU: one campaign, {len(tried)} candidates (each {args.pairs} pairs of {args.steps_per_leg} steps of "
          f"{args.step_ms:g} ms), {len(report.records)} measurements in all, {wall_s:.1f} s wall")
    print(f"  the driver's own CPU time: {cpu_s:.2f} s, {cpu_s / len(tried) * 1e3:.0f} ms per candidate ({cpu_s / wall_s:.1%} of the wall time)")
    print(f"  the workers' device seconds (the ledger's): {device_s:.1f} s, {device_s / len(tried):.2f} s per candidate")
    print(f"  verdicts: {', '.join(sorted({r.decision for r in tried}))}; stop: {report.status.stop_reason}")


if __name__ == "__main__":
    main()
