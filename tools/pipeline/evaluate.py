"""The one evaluation every judging tool runs: a built candidate gated on every input set, then timed, and the timed
launches gated too.

bench, tune's trials and tune's re-validation all call evaluate(); what differs between them is passed in:
the input sets (drawn afresh, or frozen with their references), the runner (a fresh worker per launch, or a
warm one), and `launch`, which wraps each worker launch (tune reserves device-seconds from its budget there).
With `secret` sets the timing runs on them and its last timed launch, a launch on fresh inputs and the
determinism of the timed launches are judged; every launch's guards are checked; a time that beats the
measured roof is refused as impossible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

import shutil
import statistics
import uuid

from hyperloom.core.workspace import Workspace
from hyperloom.tools.kernelspec.expr import evaluate_int
from hyperloom.tools.pipeline.judging import NOTHING, Against
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.models import Evaluation, InputSetVerdict
from hyperloom.tools.pipeline.roof import HOST_MARGIN, MARGIN, Roof, impossible, measured_roof
from hyperloom.tools.pipeline.secret import SecretSets
from hyperloom.tools.pipeline.trial import TrialRunner, check_input_set, guard_verdict, time_kernel
from hyperloom.tools.runtime.launcher import run_trial
from hyperloom.tools.runtime.models import HOST_BACKENDS, Timing, TrialRequest, TrialResult


@dataclass(frozen=True)
class InputSet:
    """One input set as a launch reads it: in_<arg>.npy in `inputs`, outputs written under `outputs`, and the
    references frozen in `reference_set` (or ref_<arg>.npy beside the inputs when None)."""

    name: str
    inputs: Path
    outputs: Path
    reference_set: Path | None = None


class _Status(Protocol):
    status: str


R = TypeVar("R", bound=_Status)
Launch = Callable[[Callable[[float], R]], R]
"""Runs one worker launch, given the function that takes its timeout: the default gives it the whole timeout."""


@dataclass(frozen=True)
class Plan:
    """How a candidate is run: timed with `timing` (None: gated only), each launch under `timeout_s` on `device` through
    `runner` (a fresh worker per launch, or a warm one) and wrapped by `launch` (tune reserves device-seconds from its
    budget there; None: each launch gets the whole timeout); `keep_going`: every set gated after a failure, none timed."""

    timing: Timing | None
    timeout_s: float
    device: int | None
    runner: TrialRunner = run_trial
    launch: Launch | None = None
    keep_going: bool = False


def evaluate(launchable: Launchable, code_object: str, sets: Sequence[InputSet], workspace: Workspace, plan: Plan,
             against: Against = NOTHING) -> Evaluation:
    """Gate the candidate on every input set in order, then time it (plan.timing; None: gate only) on the secret sets'
    timed inputs (without secret sets: the first set's), and judge what the timing ran. The first failing set ends it,
    unless plan.keep_going (every set is gated, none is timed after a failure). A failed reference audit refuses a
    candidate that passed every set: against a degenerate reference, a pass says nothing. Passed or refused, the
    evaluation names the device its worker reported (evidence names it, not the host running this loop)."""
    reported: list[str] = []
    runner = plan.runner

    def recording(request: TrialRequest, **kwargs: object) -> TrialResult:
        result = runner(request, **kwargs)
        if result.device:
            reported.append(result.device)
        return result

    recorded = replace(plan, runner=recording)
    verdicts, refused = _gated(launchable, code_object, sets, workspace, recorded, against)
    evaluation = refused if refused is not None else _timed(launchable, code_object, sets[0].inputs, workspace, recorded, against, verdicts)
    return evaluation.model_copy(update={"device": reported[-1] if reported else ""})


def _gated(launchable: Launchable, code_object: str, sets: Sequence[InputSet], workspace: Workspace, plan: Plan,
           against: Against) -> tuple[list[InputSetVerdict], Evaluation | None]:
    """Each input set gated in order: the verdicts, and the evaluation that ends here (a refusal, or a pass with
    nothing to time), else None."""
    run = plan.launch or (lambda step: step(plan.timeout_s))
    verdicts: list[InputSetVerdict] = []
    first: Evaluation | None = None
    for each in sets:
        verdict = run(lambda cap, s=each: check_input_set(launchable, code_object, s.name, s.inputs, s.outputs, workspace, timeout_s=cap,
                                                          device=plan.device, reference_set=s.reference_set, runner=plan.runner))
        verdicts.append(verdict)
        if not verdict.passed and first is None:
            first = rejected(verdict)
            if not plan.keep_going:
                break
    if first is not None:
        return verdicts, first.model_copy(update={"verdicts": verdicts})
    if against.reference_audit is not None and not against.reference_audit.passed:
        return verdicts, rejected(against.reference_audit).model_copy(update={"verdicts": [*verdicts, against.reference_audit]})
    if plan.timing is None:
        return verdicts, Evaluation(status="PASSED", verdicts=verdicts)
    return verdicts, None


def _timed(launchable: Launchable, code_object: str, first_inputs: Path, workspace: Workspace, plan: Plan, against: Against,
           verdicts: list[InputSetVerdict]) -> Evaluation:
    """The gated candidate timed (on the secret sets' timed inputs, else `first_inputs`) and what its timing ran judged."""
    assert plan.timing is not None
    run = plan.launch or (lambda step: step(plan.timeout_s))
    spec = launchable.loaded.spec
    checks = None
    secret = against.secret.get() if against.secret is not None else None  # drawn meanwhile: wait for them now
    if secret is not None:
        checks = secret.checks(secret.folder / "outputs" / uuid.uuid4().hex, None if spec.nondeterministic else spec.tolerance)
    try:
        inputs = secret.timed_inputs if secret is not None else first_inputs
        trial = run(lambda cap: time_kernel(launchable, code_object, inputs, plan.timing, workspace, timeout_s=cap, device=plan.device,
                                            runner=plan.runner, checks=checks))
        if trial.status != "OK":
            return Evaluation(status=trial.status, reason=f"timing: {trial.message}", input_set="timing", verdicts=verdicts,  # type: ignore[arg-type]
                              timing_failure=InputSetVerdict(input_set="timing", passed=False, summary=f"{trial.status}: {trial.message}",
                                                             status=trial.status))
        integrity = _integrity(launchable, trial, plan.timing, secret, checks, against.roof)
    finally:
        if checks is not None:
            shutil.rmtree(checks.outputs, ignore_errors=True)
    failed = next((v for v in integrity if not v.passed), None)
    if failed is not None:
        return rejected(failed).model_copy(update={"verdicts": verdicts, "integrity": integrity, "timing_failure": failed})
    return Evaluation(status="PASSED", verdicts=verdicts, integrity=integrity, timing=trial)


def _integrity(launchable: Launchable, trial: TrialResult, timing: Timing, secret: SecretSets | None, checks,  # type: ignore[no-untyped-def]
               roof: Roof | None) -> list[InputSetVerdict]:
    """What the timing trial ran, judged: its guards, its timed launches (with secret sets), its time against the roof."""
    spec = launchable.loaded.spec
    found = [guard_verdict("timing", trial)] if trial.guard_violations else [InputSetVerdict(input_set="guard", check="guard", passed=True,
                                                                                             summary="no write outside the buffers")]
    if secret is not None and checks is not None:
        found += secret.verdicts(trial, checks, spec.tolerance)
    roof = roof or measured_roof(trial.device)
    if not trial.kernel_s:
        return found
    median_s = statistics.median(trial.kernel_s)
    if roof is None:
        found.append(InputSetVerdict(input_set="roof", check="roof", passed=True,
                                     summary=f"not checked: no measured roof for {trial.device or launchable.target} (roofline "
                                             "measures one)"))
        return found
    bytes_moved = evaluate_int(spec.metric.bytes, launchable.shape, "metric bytes") if spec.metric.bytes is not None else None
    flops = evaluate_int(spec.metric.flops, launchable.shape, "metric flops") if spec.metric.flops is not None else None
    beyond = impossible(roof, bytes_moved, flops, median_s, flushed=timing.flush_cache,
                        margin=HOST_MARGIN if launchable.backend in HOST_BACKENDS else MARGIN)
    found.append(InputSetVerdict(input_set="roof", check="roof", passed=beyond is None,
                                 summary=f"impossible: {beyond}" if beyond else f"under the measured roof ({roof.source})"))
    return found


_STATUS_OF_CHECK = {"guard": "OUT_OF_BOUNDS", "determinism": "NONDETERMINISTIC", "roof": "IMPOSSIBLE", "reference_audit": "DEGENERATE"}


def rejected(verdict: InputSetVerdict) -> Evaluation:
    """The evaluation a failed verdict ends with: the worker's own failure, a check's refusal, or a tolerance miss (NaN or wrong)."""
    if verdict.status in ("TIMEOUT", "CRASH", "ERROR"):
        return Evaluation(status=verdict.status, reason=f"{verdict.input_set}: {verdict.summary}", input_set=verdict.input_set,
                          check=verdict.check)
    if verdict.check in _STATUS_OF_CHECK:
        return Evaluation(status=_STATUS_OF_CHECK[verdict.check], reason=f"{verdict.check}: {verdict.summary}", input_set=verdict.input_set,  # type: ignore[arg-type]
                          check=verdict.check)
    where = f"input set {verdict.input_set}" if verdict.check == "gate" else verdict.check
    return Evaluation(status="NAN" if verdict.nan else "WRONG", reason=f"tolerance miss on {where}: {verdict.summary}",
                      input_set=verdict.input_set, check=verdict.check)
