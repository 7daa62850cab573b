"""After the search: on every device the session used, winner and baseline re-timed in interleaved pairs
to show the speedup beyond noise, then both gated and timed in interleaved pairs at every shape of the
spec, a regression flagged only when the same sign test puts the slowdown beyond noise.

A pair runs A B or B A in turn (A B, B A, A B, ...), so a drift of the machine (clocks, a neighbour's
load) that favours whichever runs second cannot make identical code look faster or slower. A shape that
looks like a regression is re-timed in as many fresh pairs and flagged only when that second round says
so too: one round alone flags identical code at a rate of its alpha (1 in 128 shapes at 7 of 7), which a
spec with many shapes, or a noisy shared machine, turns into false alarms; two rounds square it. Devices
run their share at once, each through its own runner (its warm worker, or fresh processes).
"""

from __future__ import annotations

import os
import shutil
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.evaluate import InputSet, Plan, evaluate
from hyperloom.tools.pipeline.launch import Launchable, prepare
from hyperloom.tools.pipeline.stats import sign_test_p
from hyperloom.tools.pipeline.trial import stage_input_set, time_kernel
from hyperloom.tools.runtime.models import HOST_BACKENDS
from hyperloom.tools.runtime.pool import Runner, RunnerPool
from hyperloom.tools.tune.devices import slot_label, worker_slots
from hyperloom.tools.tune.budget import Budget
from hyperloom.tools.tune.models import Revalidation, ShapeSweep, TrialRecord, TuneRequest
from hyperloom.tools.tune.session import Session
from hyperloom.tools.tune.space import Params

REGRESSION = 0.02
"""A winner slower than the baseline at a shape is a regression only past this (2 % at the median) and beyond noise."""
ALPHA = 0.05
"""A sign test below this p-value calls a difference beyond noise (5 of 5 pairs: p = 0.031)."""
MAX_BUILD_THREADS = 8

Timed = Callable[[Launchable, str, Path], float | None]


def pick(trials: list[TrialRecord]) -> tuple[TrialRecord | None, TrialRecord | None]:
    """(baseline, winner): the fastest passing candidate."""
    baseline = next((t for t in trials if t.proposer == "baseline"), None)
    passed = [t for t in trials if t.status == "PASSED" and t.median_s]
    return baseline, min(passed, key=lambda t: t.median_s, default=None)


def interleaved(time_a: Callable[[], float | None], time_b: Callable[[], float | None], pairs: int) -> tuple[list[float], list[float]]:
    """`pairs` pairs of timings, A first in even pairs and B first in odd ones; stops at the first that could not be timed."""
    a_s: list[float] = []
    b_s: list[float] = []
    for index in range(pairs):
        if index % 2 == 0:
            a = time_a()
            b = time_b() if a is not None else None
        else:
            b = time_b()
            a = time_a() if b is not None else None
        if a is None or b is None:
            break
        a_s.append(a)
        b_s.append(b)
    return a_s, b_s


def shape_verdict(shape: dict[str, int], device: str, baseline_s: list[float], winner_s: list[float], note: str = "") -> ShapeSweep:
    """A shape's sweep row from one round of interleaved pairs: a regression only when the winner is slower beyond noise."""
    if not baseline_s:
        return ShapeSweep(shape=shape, device=device, baseline_s=None, winner_s=None, speedup=None, regression=False, note=note)
    base, win = statistics.median(baseline_s), statistics.median(winner_s)
    slower = sum(w > b for b, w in zip(baseline_s, winner_s))
    p = sign_test_p(slower, len(baseline_s))
    speedup = base / win
    return ShapeSweep(shape=shape, device=device, baseline_s=base, winner_s=win, speedup=speedup, pairs=len(baseline_s),
                      winner_slower=slower, slower_p=p, regression=p < ALPHA and speedup < 1 - REGRESSION, note=note)


def confirmed(first: ShapeSweep, recheck_baseline_s: list[float], recheck_winner_s: list[float]) -> ShapeSweep:
    """A suspected regression (`first`) after its second round of fresh pairs: flagged only when both rounds say so.

    The row keeps the first round's medians and counts; its p-value is the weaker round's, and the note gives the second."""
    if not recheck_baseline_s:
        return first.model_copy(update={"note": _join(first.note, "could not be re-timed to confirm (the budget ran out, or a run failed): "
                                                                  "one round's verdict")})
    second = shape_verdict(first.shape, first.device, recheck_baseline_s, recheck_winner_s)
    said = f"{second.winner_slower}/{second.pairs} slower, {second.speedup:.3f}x"
    note = f"confirmed by a second round ({said})" if second.regression else f"a second round did not confirm it ({said}): noise"
    return first.model_copy(update={"regression": second.regression, "slower_p": max(first.slower_p or 0.0, second.slower_p or 0.0),
                                    "note": _join(first.note, note)})


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def revalidate(session: Session, request: TuneRequest, workspace: Workspace, pool: RunnerPool | None = None) -> None:
    """Store every device's interleaved re-run and shape sweep in the ledger (idempotent: done once per winner)."""
    ledger = session.ledger
    trials = ledger.trials()
    baseline, winner = pick(trials)
    if baseline is None or winner is None or baseline.status != "PASSED" or winner.hash == baseline.hash:
        ledger.set_revalidation(None, [], [])
        return
    if ledger.revalidated_winner() == winner.hash:
        return
    revalidations, sweep = revalidate_pair(session, request, workspace, baseline, winner, pool)
    ledger.set_revalidation(winner.hash, revalidations, sweep)


def revalidate_pair(session: Session, request: TuneRequest, workspace: Workspace, baseline: TrialRecord, winner: TrialRecord,
                    pool: RunnerPool | None = None) -> tuple[list[Revalidation], list[ShapeSweep]]:
    """`winner` against `baseline` on every device the session's trials ran on (each device's share at once): the re-timing
    at the session's shape, and (with request.sweep_shapes) the sweep of every shape, by shape then device."""
    backend = session.launchable.backend
    trials = session.ledger.trials()
    devices = sorted({t.device_index for t in trials if t.worker >= 0
                      and t.device_index is not None}) if backend not in HOST_BACKENDS else []
    devices = devices or worker_slots(backend, 1, request.devices)[:1]
    job = _Job(session, request, workspace, Budget(request.budget_device_s, session.ledger.spent_s()), baseline, winner)
    own = pool is None
    pool = pool or RunnerPool(request.worker_mode, backend, devices, request.recycle_after)
    try:
        with ThreadPoolExecutor(max_workers=len(devices), thread_name_prefix="tune-revalidate") as threads:
            results = list(threads.map(lambda d: job.on_device(d, pool.for_device(d)), devices))  # type: ignore[union-attr]
    finally:
        if own:
            pool.close()
        job.cleanup()
    revalidations = [r for r, _ in results if r is not None]
    sweep = sorted((s for _, rows in results for s in rows), key=lambda s: (job.shape_order(s.shape), s.device))
    return revalidations, sweep


@dataclass
class _Staged:
    index: int
    shape: dict[str, int]
    inputs: Path | None
    builds: dict[str, tuple[Launchable, str]]  # by role: baseline, winner
    note: str = ""


class _Job:
    """What every device's share needs: the builds at the session's shape and, for the sweep, each shape's inputs and builds."""

    def __init__(self, session: Session, request: TuneRequest, workspace: Workspace, budget: Budget, baseline: TrialRecord,
                 winner: TrialRecord) -> None:
        self.session, self.request, self.workspace, self.budget = session, request, workspace, budget
        self.roles = {"baseline": baseline, "winner": winner}
        self.builds = {role: _built(*session.launchable_for(t.params), workspace) for role, t in self.roles.items()}
        self.folder = session.folder / "scratch" / "sweep"
        self.shapes = self._stage_shapes() if request.sweep_shapes else []

    def _stage_shapes(self) -> list[_Staged]:
        loaded = self.session.launchable.loaded

        def stage(index: int) -> _Staged:
            shape = dict(loaded.spec.shapes[index])
            try:
                inputs = self.folder / str(index) / "in"
                # the variants share the spec's args
                stage_input_set(prepare(loaded, self.session.launchable.variant_name, self.request.target, index), "seeded", inputs)
                builds = {}
                for role, trial in self.roles.items():
                    variant, params = self.session.launchable_for(trial.params)
                    builds[role] = _built(prepare(loaded, variant.variant_name, self.request.target, index), params, self.workspace)
                return _Staged(index, shape, inputs, builds)
            except HyperloomError as exc:  # a variant that does not build or launch at this shape
                return _Staged(index, shape, None, {}, note=f"not run at this shape: {exc}")

        with ThreadPoolExecutor(max_workers=max(1, min(MAX_BUILD_THREADS, os.cpu_count() or 1))) as threads:
            return list(threads.map(stage, range(len(loaded.spec.shapes))))

    def shape_order(self, shape: dict[str, int]) -> int:
        return next((s.index for s in self.shapes if s.shape == shape), 0)

    def on_device(self, device: int | None, runner: Runner) -> tuple[Revalidation | None, list[ShapeSweep]]:
        request, ledger = self.request, self.session.ledger
        names: list[str] = []

        def timed(launchable: Launchable, code_object: str, inputs: Path) -> float | None:
            granted = self.budget.reserve(request.timeout_s)
            if granted is None:
                return None
            result = time_kernel(launchable, code_object, inputs, request.timing(), self.workspace, timeout_s=granted, device=device,
                                 runner=runner)
            self.budget.settle(granted, result.elapsed_s)
            ledger.add_spent("revalidation", result.elapsed_s)
            names.append(result.device)
            return statistics.median(result.kernel_s) if result.status == "OK" and result.kernel_s else None

        base_s, win_s = interleaved(lambda: timed(*self.builds["baseline"], self.session.inputs("seeded")),
                                    lambda: timed(*self.builds["winner"], self.session.inputs("seeded")), request.revalidate_pairs)
        label = _label(device, names)
        revalidation = None
        if base_s:
            wins = sum(b < a for a, b in zip(base_s, win_s))
            p = sign_test_p(wins, len(base_s))
            revalidation = Revalidation(device=label, pairs=len(base_s), baseline_s=base_s, winner_s=win_s,
                                        speedup=statistics.median(base_s) / statistics.median(win_s), winner_faster=wins, sign_test_p=p,
                                        beyond_noise=p < ALPHA)
        return revalidation, [self._sweep_shape(staged, device, runner, timed, label) for staged in self.shapes]

    def _sweep_shape(self, staged: _Staged, device: int | None, runner: Runner, timed: Timed, label: str) -> ShapeSweep:
        if staged.inputs is None:
            return shape_verdict(staged.shape, label, [], [], staged.note)
        passes, notes = {}, []
        for role, (launchable, code_object) in staged.builds.items():
            outputs = self.folder / str(staged.index) / f"{role}-{slot_label(device).replace(' ', '')}"
            gated = evaluate(launchable, code_object, [InputSet("seeded", staged.inputs, outputs)], self.workspace,
                             Plan(None, self.request.timeout_s, device, runner))
            verdict = gated.verdicts[0]
            self.session.ledger.add_spent("sweep", verdict.elapsed_s)
            passes[role] = gated.passed
            if not gated.passed:
                notes.append(f"{role} fails the gate: {verdict.summary}")
        if not all(passes.values()):
            row = shape_verdict(staged.shape, label, [], [], "; ".join(notes))
            return row.model_copy(update={"regression": passes["baseline"] and not passes["winner"]})

        def round_of_pairs() -> tuple[list[float], list[float]]:
            return interleaved(lambda: timed(*staged.builds["baseline"], staged.inputs),  # type: ignore[arg-type]
                               lambda: timed(*staged.builds["winner"], staged.inputs), self.request.sweep_pairs)

        base_s, win_s = round_of_pairs()
        row = shape_verdict(staged.shape, label, base_s, win_s, "" if base_s else "not timed (the budget ran out, or a run failed)")
        return confirmed(row, *round_of_pairs()) if row.regression else row

    def cleanup(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _label(device: int | None, names: list[str]) -> str:
    name = next((n for n in names if n), "")
    return slot_label(device) + (f" ({name})" if name and device is not None else "")


def _built(launchable: Launchable, params: Params, workspace: Workspace) -> tuple[Launchable, str]:
    """A trial's launch geometry and its compiled code object, from its variant's launchable and its params."""
    specialized, build = build_with(launchable, workspace, params)
    if not build.ok:
        raise HyperloomError(f"{launchable.variant_name} does not build at shape {launchable.shape}: {build.summary}",
                             "see the compile log with compile_kernel")
    return specialized, build.code_object
