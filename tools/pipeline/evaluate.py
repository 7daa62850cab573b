"""The one evaluation every judging tool runs: a built candidate gated on every input set, then timed.

bench, tune's trials and tune's re-validation all call evaluate(); what differs between them is passed in:
the input sets (drawn afresh, or frozen with their references), the runner (a fresh worker per launch, or a
warm one), and `launch`, which wraps each worker launch (tune reserves device-seconds from its budget there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.models import Evaluation, InputSetVerdict
from hyperloom.tools.pipeline.trial import TrialRunner, check_input_set, time_kernel
from hyperloom.tools.runtime.launcher import run_trial
from hyperloom.tools.runtime.models import Timing


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


def evaluate(
    launchable: Launchable, code_object: str, sets: Sequence[InputSet], workspace: Workspace, *, timing: Timing | None, timeout_s: float,
    device: int | None, runner: TrialRunner = run_trial, launch: Launch | None = None, keep_going: bool = False,
) -> Evaluation:
    """Gate the candidate on every input set in order, then time it on the first set's inputs (with `timing`; None:
    gate only). The first failing set ends it, unless `keep_going` (every set is gated, none is timed after a failure)."""
    run = launch or (lambda step: step(timeout_s))
    verdicts: list[InputSetVerdict] = []
    first: Evaluation | None = None
    for each in sets:
        verdict = run(lambda cap, s=each: check_input_set(launchable, code_object, s.name, s.inputs, s.outputs, workspace, timeout_s=cap, device=device,
                                                          reference_set=s.reference_set, runner=runner))
        verdicts.append(verdict)
        if not verdict.passed and first is None:
            first = _rejected(verdict)
            if not keep_going:
                break
    if first is not None:
        return first.model_copy(update={"verdicts": verdicts})
    if timing is None:
        return Evaluation(status="PASSED", verdicts=verdicts)
    trial = run(lambda cap: time_kernel(launchable, code_object, sets[0].inputs, timing, workspace, timeout_s=cap, device=device, runner=runner))
    if trial.status != "OK":
        return Evaluation(status=trial.status, reason=f"timing: {trial.message}", input_set="timing", verdicts=verdicts,  # type: ignore[arg-type]
                          timing_failure=InputSetVerdict(input_set="timing", passed=False, summary=f"{trial.status}: {trial.message}", status=trial.status))
    return Evaluation(status="PASSED", verdicts=verdicts, timing=trial)


def _rejected(verdict: InputSetVerdict) -> Evaluation:
    """The evaluation that a failed input set ends with: the worker's own failure, or a tolerance miss (NaN or wrong)."""
    if verdict.status in ("TIMEOUT", "CRASH", "ERROR"):
        return Evaluation(status=verdict.status, reason=f"{verdict.input_set}: {verdict.summary}", input_set=verdict.input_set)
    return Evaluation(status="NAN" if verdict.nan else "WRONG", reason=f"tolerance miss on input set {verdict.input_set}: {verdict.summary}",
                      input_set=verdict.input_set)
