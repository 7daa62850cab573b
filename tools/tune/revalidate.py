"""After the search: winner and baseline timed interleaved (A B A B ...) to show the speedup beyond
noise, then both swept across every shape of the spec, regressions reported."""

from __future__ import annotations

import json
import math
import shutil
import statistics

from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.run import Launchable, build_with, check_input_set, prepare, stage_input_set, time_kernel
from hyperloom.tools.tune.devices import worker_slots
from hyperloom.tools.tune.evaluate import Budget
from hyperloom.tools.tune.models import Revalidation, ShapeSweep, TrialRecord, TuneRequest
from hyperloom.tools.tune.session import Session
from hyperloom.tools.tune.space import Params

REGRESSION = 0.02
"""The winner is called a regression at a shape when it is more than 2 % slower than the baseline there."""


def pick(trials: list[TrialRecord]) -> tuple[TrialRecord | None, TrialRecord | None]:
    """(baseline, winner): the fastest passing candidate."""
    baseline = next((t for t in trials if t.proposer == "baseline"), None)
    passed = [t for t in trials if t.status == "PASSED" and t.median_s]
    return baseline, min(passed, key=lambda t: t.median_s, default=None)


def sign_test_p(wins: int, pairs: int) -> float:
    """One-sided p-value of at least `wins` of `pairs` under a fair coin."""
    return sum(math.comb(pairs, k) for k in range(wins, pairs + 1)) / 2**pairs


def revalidate(session: Session, request: TuneRequest, workspace: Workspace) -> None:
    """Store the interleaved re-run and the shape sweep in the ledger (idempotent: done once per winner)."""
    ledger = session.ledger
    baseline, winner = pick(ledger.trials())
    if baseline is None or winner is None or baseline.status != "PASSED" or winner.hash == baseline.hash:
        ledger.set("revalidation", json.dumps(None))
        return
    if ledger.get("revalidated_winner") == winner.hash:
        return
    budget = Budget(request.budget_device_s, ledger.spent_s())
    device = worker_slots(session.launchable.backend, 1, request.devices)[0]
    timing = request.timing()
    builds = {t.hash: _built(*session.launchable_for(t.params), workspace) for t in (baseline, winner)}

    def timed(launchable, code_object, inputs) -> float | None:  # type: ignore[no-untyped-def]
        granted = budget.reserve(request.timeout_s)
        if granted is None:
            return None
        result = time_kernel(launchable, code_object, inputs, timing, workspace, timeout_s=granted, device=device)
        budget.settle(granted, result.elapsed_s)
        ledger.add_spent("revalidation", result.elapsed_s)
        return statistics.median(result.kernel_s) if result.status == "OK" and result.kernel_s else None

    base_s: list[float] = []
    win_s: list[float] = []
    for _ in range(request.revalidate_pairs):
        a = timed(*builds[baseline.hash], session.inputs("seeded"))
        b = timed(*builds[winner.hash], session.inputs("seeded"))
        if a is None or b is None:
            break
        base_s.append(a)
        win_s.append(b)
    revalidation = None
    if base_s:
        wins = sum(b < a for a, b in zip(base_s, win_s))
        p = sign_test_p(wins, len(base_s))
        revalidation = Revalidation(
            pairs=len(base_s), baseline_s=base_s, winner_s=win_s, speedup=statistics.median(base_s) / statistics.median(win_s),
            winner_faster=wins, sign_test_p=p, beyond_noise=p < 0.05,
        )
    ledger.set("revalidation", json.dumps(revalidation.model_dump() if revalidation else None))
    ledger.set("sweep", json.dumps([s.model_dump() for s in _sweep(session, request, workspace, baseline, winner, timed)] if request.sweep_shapes else []))
    ledger.set("revalidated_winner", winner.hash)


def _sweep(session: Session, request: TuneRequest, workspace: Workspace, baseline: TrialRecord, winner: TrialRecord, timed) -> list[ShapeSweep]:  # type: ignore[no-untyped-def]
    results = []
    loaded = session.launchable.loaded
    device = worker_slots(session.launchable.backend, 1, request.devices)[0]
    for index, shape in enumerate(loaded.spec.shapes):
        folder = session.folder / "scratch" / "sweep" / str(index)
        try:
            stage_input_set(prepare(loaded, session.launchable.variant_name, request.target, index), "seeded", folder / "in")  # the variants share the spec's args
            times, notes = {}, []
            for label, trial in (("baseline", baseline), ("winner", winner)):
                variant, params = session.launchable_for(trial.params)
                launchable, code_object = _built(prepare(loaded, variant.variant_name, request.target, index), params, workspace)
                verdict = check_input_set(launchable, code_object, "seeded", folder / "in", folder / label, workspace, timeout_s=request.timeout_s, device=device)
                session.ledger.add_spent("sweep", verdict.elapsed_s)
                times[label] = timed(launchable, code_object, folder / "in") if verdict.passed else None
                if not verdict.passed:
                    notes.append(f"{label} fails the gate: {verdict.summary}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        base, win = times.get("baseline"), times.get("winner")
        speedup = base / win if base and win else None
        results.append(ShapeSweep(shape=dict(shape), baseline_s=base, winner_s=win, speedup=speedup,
                                  regression=bool(speedup is not None and speedup < 1 - REGRESSION) or (base is not None and win is None),
                                  note="; ".join(notes)))
    return results


def _built(launchable: Launchable, params: Params, workspace: Workspace) -> tuple[Launchable, str]:
    """A trial's launch geometry and its compiled code object, from its variant's launchable and its params."""
    specialized, build = build_with(launchable, workspace, params)
    return specialized, build.code_object
