"""One candidate through the pipeline: compile (cached) → disasm rules → every input set gated → timed.

Two steps, so that the loop can compile ahead on the CPU while the devices run other candidates:
compile_candidate (compile and rules) and run_compiled (every input set gated, then timed, through a
device's runner: a fresh worker process per launch, or its warm worker). Every way a candidate can
fail ends as an Outcome with a status and a reason; only bugs raise. Each worker launch asks the
budget first and is capped by what is left of it. Each step's seconds go to the candidate's phases.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.run import Launchable, build_with, check_input_set, time_kernel
from hyperloom.tools.bench.stats import SampleStats, summarize
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.runtime.models import Timing
from hyperloom.tools.runtime.pool import FreshRunner, Runner
from hyperloom.tools.tune.phases import PhaseClock
from hyperloom.tools.tune.session import Session, scratch
from hyperloom.tools.tune.space import Params
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest

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
    phases_s: dict[str, float] = field(default_factory=dict)


@dataclass
class Compiled:
    """A candidate that built and met the disasm rules: its launch geometry and code object, and the seconds it took."""

    launchable: Launchable
    build: TargetBuild
    clock: PhaseClock


class BudgetExhausted(Exception):
    pass


def compile_candidate(session: Session, params: Params, workspace: Workspace, *, expect: list[str], forbid: list[str]) -> Compiled | Outcome:
    """Compile (cached) and check the disasm rules: a Compiled to run, or the Outcome that rejects it."""
    clock = PhaseClock()
    started = time.perf_counter()
    try:
        variant, rest = session.launchable_for(params)
        launchable, build = build_with(variant, workspace, rest)
    except HyperloomError as exc:  # e.g. a define the compiler's allow-list refuses, a geometry that changes the problem
        clock.add("compile", time.perf_counter() - started)
        return Outcome(status="COMPILE_ERROR", reason=str(exc), input_set="compile", phases_s=clock.rounded())
    clock.add("compile", time.perf_counter() - started)
    if not build.ok:
        return Outcome(status="COMPILE_ERROR", reason=build.summary + (f": {build.log.strip()[-400:]}" if build.log.strip() else ""), input_set="compile",
                       compile_s=build.compile_s, phases_s=clock.rounded())
    if expect or forbid:
        started = time.perf_counter()
        checked = verify(VerifyRequest(code_object=build.code_object, expect=expect, forbid=forbid), workspace)
        clock.add("rules", time.perf_counter() - started)
        if not checked.passed:
            return Outcome(status="RULE_FAILED", reason=checked.summary, input_set="disasm", compile_s=build.compile_s, phases_s=clock.rounded())
    return Compiled(launchable, build, clock)


def run_compiled(
    session: Session, compiled: Compiled, workspace: Workspace, budget: Budget, *, runner: Runner, timing: Timing, timeout_s: float, digest: str,
) -> Outcome:
    """Gate a compiled candidate on every input set through `runner` (its device's), then time it if it passed."""
    launchable, build, clock = compiled.launchable, compiled.build, compiled.clock
    outcome = Outcome(status="ERROR", compile_s=build.compile_s)
    recorded = clock.recording(runner)
    device = runner.device
    started_run = time.perf_counter()

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
            clock.settle(used)
        return result, granted

    out = scratch(session, digest)
    try:
        for input_set in launchable.input_sets:
            verdict, granted = launch(lambda cap, s=input_set: check_input_set(
                launchable, build.code_object, s, session.inputs(s), out / s, workspace,
                timeout_s=cap, device=device, reference_set=session.references(s), runner=recorded))
            if not verdict.passed:
                outcome.input_set = input_set
                if verdict.status == "TIMEOUT" and granted < timeout_s:
                    raise BudgetExhausted  # killed by the budget's cap, not by its own hang
                if verdict.status in ("TIMEOUT", "CRASH", "ERROR"):
                    outcome.status, outcome.reason = verdict.status, f"{input_set}: {verdict.summary}"
                else:
                    outcome.status = "NAN" if verdict.nan else "WRONG"
                    outcome.reason = f"tolerance miss on input set {input_set}: {verdict.summary}"
                    runner.discard("verdict")  # its code misbehaved: a warm process it ran in is not trusted with the next
                return outcome
        trial, granted = launch(lambda cap: time_kernel(launchable, build.code_object, session.inputs("seeded"), timing, workspace,
                                                        timeout_s=cap, device=device, runner=recorded))
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
        clock.add("other", time.perf_counter() - started_run - outcome.device_s)
        outcome.phases_s = clock.rounded()


def evaluate(
    session: Session, params: Params, workspace: Workspace, budget: Budget, *, device: int | None, timing: Timing, timeout_s: float,
    expect: list[str], forbid: list[str], digest: str, runner: Runner | None = None,
) -> Outcome:
    """Run one candidate to its verdict (both steps in turn); the outcome says why it was rejected, or how fast it was."""
    compiled = compile_candidate(session, params, workspace, expect=expect, forbid=forbid)
    if isinstance(compiled, Outcome):
        return compiled
    return run_compiled(session, compiled, workspace, budget, runner=runner or FreshRunner(device), timing=timing, timeout_s=timeout_s, digest=digest)
