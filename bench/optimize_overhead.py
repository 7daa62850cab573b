"""What an optimize campaign costs on its own, per candidate: the CPU time of the process that drives it (freeze,
ledger, lever checks, A/B bookkeeping, judging, the report), apart from the workers that run the workload.

A tiny workload (a busy loop of --step-ms, so the workers' own cost is small and known) declares a knob with
--candidates values that change nothing; each `knob:variant=vN` is one candidate, gated and A/B-timed beside the
baseline (none is faster, none is kept, so every candidate costs the same). The driver's CPU time is
time.process_time() around run_campaign (this process only: its threads, not its worker processes); the workers'
is the ledger's device seconds. Printed: both per candidate, and the driver's share of the campaign's wall time.

    .venv/bin/python bench/optimize_overhead.py [--candidates 8] [--step-ms 2] [--pairs 5]

With --decoder: what a campaign costs per candidate on a decoder as a user writes it: a small Llama-family model
(tests/fixtures/twin/decoder.py: random weights, a plain greedy `generate`), no levers listed, no tolerance declared (the twin rule),
under --deadline-s; printed: candidates per device-hour (every device-second the campaign spent, the freeze's
baseline, A/A and reference builds included, over the candidates it tried), each trial's seconds and the gate's share.

    .venv/bin/python bench/optimize_overhead.py --decoder [--deadline-s 240] [--k 4]

With --k: the decoder frozen first under a twin rule k times the model's own error (a looser tolerance declared), so the
lossy levers (int8_weight_only, fp8_weight_only) are tried too, on a stack that compiles.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.api import optimize_report, run_campaign
from hyperloom.tools.optimize.models import OptimizeRef, OptimizeRequest
from hyperloom.tools.optimize.report import by_part, pace
from hyperloom.tools.workload.api import workload_freeze
from hyperloom.tools.workload.models import WorkloadFreezeRequest

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


# a user's plain Llama generate, as the twin tests use it
DECODER = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "twin" / "decoder.py"


def decoder(deadline_s: float, pairs: int, steps_per_leg: int, k: float | None) -> None:
    """One campaign over the small decoder, no levers listed: its cost per candidate; with `k`, frozen first under it."""
    with tempfile.TemporaryDirectory(prefix="hyperloom-optimize-decoder-") as tmp:
        root = Path(tmp)
        (root / "decoder.py").write_text(DECODER.read_text())
        workspace = Workspace(root)
        if k is not None:
            workload_freeze(WorkloadFreezeRequest(workload="decoder.py:build", name="decoder", k=k, timeout_s=240.0), workspace)
        request = OptimizeRequest(workload=None if k is not None else "decoder.py:build", session="decoder", pairs=pairs,
                                  steps_per_leg=steps_per_leg, deadline_s=deadline_s, timeout_s=120.0,
                                  fixed_inputs=True)  # it has no inputs(seed): what a candidate costs is the point here, not what is kept
        wall0 = time.perf_counter()
        run_campaign(request, workspace)
        wall_s = time.perf_counter() - wall0
        report = optimize_report(OptimizeRef(session="decoder"), workspace)
    tried, spent = report.status.candidates, report.status.spent_device_s
    print(f"MEASURED on this machine's CPU: one campaign over a 4-layer Llama decoder (plain generate, no levers listed), {wall_s:.0f} s "
          f"wall, deadline {deadline_s:g} s" + (f", frozen with k = {k:g}" if k is not None else ""))
    print(f"  {tried} candidates tried, {spent:.0f} device-s spent: " + (pace(tried, spent) if tried else "none tried"))
    print(f"  by part: {by_part(report.status.spent_by_part_s)}")
    for r in report.records:
        share = f", gate {r.result.gate_s / r.result.trial_s:.0%}" if r.result.gate_s and r.result.trial_s else ""
        gain = f" {r.result.speedup:.2f}x" if r.result.speedup else ""
        print(f"  #{r.seq} {r.phase:<10} {' + '.join(r.result.levers) or 'A/A':<48} {r.result.verdict:<10}{gain:>7} "
              f"{r.device_s:6.1f} s{share}")
    print(f"  stack: {' + '.join(report.status.stack) or 'nothing kept'}; stop: {report.status.stop_reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps-per-leg", type=int, default=2)
    parser.add_argument("--decoder", action="store_true",
                        help="a campaign over a small decoder, no levers listed: candidates per device-hour")
    parser.add_argument("--deadline-s", type=float, default=240.0)
    parser.add_argument("--k", type=float, default=None,
                        help="with --decoder: freeze under this twin rule first (a looser tolerance declared)")
    args = parser.parse_args()
    if args.decoder:
        decoder(args.deadline_s, args.pairs, args.steps_per_leg, args.k)
        return
    values = [f"v{i}" for i in range(args.candidates + 1)]
    with tempfile.TemporaryDirectory(prefix="hyperloom-optimize-overhead-") as tmp:
        root = Path(tmp)
        (root / "busy.py").write_text(WORKLOAD.format(values=", ".join(repr(v) for v in values)))
        workspace = Workspace(root)
        request = OptimizeRequest(workload="busy.py:build", session="busy", knobs={"step_ms": str(args.step_ms)},
                                  levers=[f"knob:variant={v}" for v in values[1:]],
                                  pairs=args.pairs, steps_per_leg=args.steps_per_leg, timeout_s=120.0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        run_campaign(request, workspace)
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        report = optimize_report(OptimizeRef(session="busy"), workspace)
    tried = [r for r in report.records if r.phase == "levers"]
    device_s = sum(r.device_s for r in report.records)
    if not tried:
        raise SystemExit(f"no candidate was timed: {report.status.summary}")
    print(f"MEASURED on this machine's CPU: one campaign, {len(tried)} candidates (each {args.pairs} pairs of {args.steps_per_leg} steps "
          f"of {args.step_ms:g} ms), {len(report.records)} measurements in all, {wall_s:.1f} s wall")
    print(f"  the driver's own CPU time: {cpu_s:.2f} s, {cpu_s / len(tried) * 1e3:.0f} ms per candidate ({cpu_s / wall_s:.1%} of "
          "the wall time)")
    print(f"  the workers' device seconds (the ledger's): {device_s:.1f} s, {device_s / len(tried):.2f} s per candidate")
    print(f"  verdicts: {', '.join(sorted({r.decision for r in tried}))}; stop: {report.status.stop_reason}")


if __name__ == "__main__":
    main()
