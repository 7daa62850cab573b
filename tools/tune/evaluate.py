"""One candidate through the pipeline: compile (cached) → disasm rules → every input set gated → timed.

Every way a candidate can fail ends as an Outcome with a status and a reason; only bugs raise.
Each worker launch asks the budget first and is capped by what is left of it.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.run import build_with, check_input_set, time_kernel
from hyperloom.tools.bench.stats import SampleStats, summarize
from hyperloom.tools.runtime.models import Timing
from hyperloom.tools.tune.session import Session, scratch
from hyperloom.tools.tune.space import Params
from hyperloom.tools.verify.models import VerifyRequest
from hyperloom.tools.verify.verify import verify

MIN_LAUNCH_S = 0.5
"""A launch is not started with less budget than this left: it could not finish anything useful."""


class Budget:
    """Device-seconds shared by the workers: each launch reserves its cap and settles what it used.

    Only time actually used is spent. A launch that finds the rest reserved by launches in flight
    waits for them to settle (they usually use far less than their cap) instead of giving up.
    """

    def __init__(self, limit_s: float, spent_s: float) -> None:
        self.limit_s = limit_s
        self._spent_s = spent_s
        self._reserved_s = 0.0
        self._settled = threading.Condition()

    @property
    def spent_s(self) -> float:
        return self._spent_s

    def unspent_s(self) -> float:
        """What is left if every launch in flight used nothing more: the figure a stop rule reads."""
        with self._settled:
            return self.limit_s - self._spent_s

    def reserve(self, cap_s: float, *, wait: bool = False) -> float | None:
        """The timeout a launch may use (at most `cap_s`), reserved; None when the budget cannot start one.
        With `wait`, a launch that finds the rest reserved waits for the launches in flight to settle."""
        with self._settled:
            while True:
                left = self.limit_s - self._spent_s - self._reserved_s
                if left >= min(MIN_LAUNCH_S, cap_s):
                    granted = min(cap_s, left)
                    self._reserved_s += granted
                    return granted
                if not wait or self._reserved_s <= 0 or self.limit_s - self._spent_s < min(MIN_LAUNCH_S, cap_s):
                    return None
                self._settled.wait()

    def settle(self, reserved_s: float, used_s: float) -> None:
        with self._settled:
            self._reserved_s -= reserved_s
            self._spent_s += used_s
            self._settled.notify_all()


@dataclass
class Outcome:
    status: str
    reason: str = ""
    input_set: str | None = None
    kernel: SampleStats | None = None
    device_name: str = ""
    device_s: float = 0.0
    compile_s: float = 0.0
    finished: bool = True  # False: stopped by the budget before its end, not a trial to record
    samples_s: list[float] = field(default_factory=list)


class BudgetExhausted(Exception):
    pass


def evaluate(
    session: Session, params: Params, workspace: Workspace, budget: Budget, *, device: int | None, timing: Timing, timeout_s: float,
    expect: list[str], forbid: list[str], digest: str,
) -> Outcome:
    """Run one candidate to its verdict; the outcome says why it was rejected, or how fast it was."""
    outcome = Outcome(status="ERROR")

    def launch(run):  # type: ignore[no-untyped-def]
        granted = budget.reserve(timeout_s, wait=True)
        if granted is None:
            raise BudgetExhausted
        started = time.perf_counter()
        try:
            result = run(granted)
        finally:
            used = time.perf_counter() - started
            budget.settle(granted, used)
            outcome.device_s += used
        return result, granted

    try:
        variant, rest = session.launchable_for(params)
        launchable, build = build_with(variant, workspace, rest)
    except HyperloomError as exc:  # e.g. a define the compiler's allow-list refuses, a geometry that changes the problem
        return Outcome(status="COMPILE_ERROR", reason=str(exc), input_set="compile")
    outcome.compile_s = build.compile_s
    if not build.ok:
        return Outcome(status="COMPILE_ERROR", reason=build.summary + (f": {build.log.strip()[-400:]}" if build.log.strip() else ""), input_set="compile", compile_s=build.compile_s)
    if expect or forbid:
        checked = verify(VerifyRequest(code_object=build.code_object, expect=expect, forbid=forbid), workspace)
        if not checked.passed:
            return Outcome(status="RULE_FAILED", reason=checked.summary, input_set="disasm", compile_s=build.compile_s)
    out = scratch(session, digest)
    try:
        for input_set in launchable.input_sets:
            verdict, granted = launch(lambda cap, s=input_set: check_input_set(
                launchable, build.code_object, s, session.inputs(s), out / s, workspace,
                timeout_s=cap, device=device, reference_set=session.references(s)))
            if not verdict.passed:
                outcome.input_set = input_set
                if verdict.status == "TIMEOUT" and granted < timeout_s:
                    raise BudgetExhausted  # killed by the budget's cap, not by its own hang
                if verdict.status in ("TIMEOUT", "CRASH", "ERROR"):
                    outcome.status, outcome.reason = verdict.status, f"{input_set}: {verdict.summary}"
                else:
                    outcome.status = "NAN" if verdict.nan else "WRONG"
                    outcome.reason = f"tolerance miss on input set {input_set}: {verdict.summary}"
                return outcome
        trial, granted = launch(lambda cap: time_kernel(launchable, build.code_object, session.inputs("seeded"), timing, workspace, timeout_s=cap, device=device))
        if trial.status != "OK":
            if trial.status == "TIMEOUT" and granted < timeout_s:
                raise BudgetExhausted
            outcome.status, outcome.reason, outcome.input_set = trial.status, f"timing: {trial.message}", "timing"
            return outcome
        outcome.status, outcome.kernel, outcome.device_name, outcome.samples_s = "PASSED", summarize(trial.kernel_s), trial.device, trial.kernel_s
        return outcome
    except BudgetExhausted:
        outcome.finished, outcome.reason = False, "the device-second budget ran out before this candidate finished"
        return outcome
    finally:
        shutil.rmtree(out, ignore_errors=True)
