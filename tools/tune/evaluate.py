"""One tune candidate through the pipeline, in two steps so that the loop compiles ahead on the CPU while the
devices run others: compile_candidate (build and disasm rules) and run_compiled (the pipeline's evaluate() through
a device's runner, each worker launch capped by what is left of the device-second budget).

Every way a candidate can fail ends as an Outcome with a status and a reason; only bugs raise.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field

from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.candidate import Built, Unbuilt, build_candidate, built_digest
from hyperloom.tools.pipeline.evaluate import InputSet, Plan, evaluate as evaluate_candidate
from hyperloom.tools.pipeline.judging import NOTHING, Judging
from hyperloom.tools.pipeline.stats import SampleStats, summarize
from hyperloom.tools.runtime.models import Timing
from hyperloom.tools.runtime.pool import Runner
from hyperloom.tools.tune.budget import Budget, BudgetExhausted
from hyperloom.tools.tune.session import Session, scratch
from hyperloom.tools.tune.space import Params

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
    build_sha256: str | None = None


def compile_candidate(session: Session, params: Params, workspace: Workspace, *, expect: list[str], forbid: list[str]) -> Built | Outcome:
    """Compile (cached) and check the disasm rules: a Built to run, or the Outcome that rejects it."""
    variant, rest = session.launchable_for(params)
    built = build_candidate(variant, rest, workspace, expect=expect, forbid=forbid)
    if isinstance(built, Unbuilt):
        return Outcome(status=built.status, reason=built.reason, input_set=built.input_set, compile_s=built.compile_s,
                       phases_s=built.clock.rounded())
    return built


def run_compiled(
    session: Session, compiled: Built, workspace: Workspace, budget: Budget, *, runner: Runner, timing: Timing, timeout_s: float,
    digest: str, judging: Judging | None = None,
) -> Outcome:
    """Gate a compiled candidate on every input set through `runner` (its device's), then time it if it passed (on the
    run's secret sets, against its roof and reference audit, when `judging` gives them)."""
    launchable, build, clock = compiled.launchable, compiled.build, compiled.clock
    outcome = Outcome(status="ERROR", compile_s=build.compile_s, build_sha256=built_digest(launchable, workspace.root / build.code_object))
    recorded = clock.recording(runner)
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
        if result.status == "TIMEOUT" and granted < timeout_s:
            raise BudgetExhausted  # killed by the budget's cap, not by its own hang
        return result

    out = scratch(session, digest)
    sets = [InputSet(s, session.inputs(s), out / s, session.references(s)) for s in launchable.input_sets]
    try:
        evaluation = evaluate_candidate(launchable, build.code_object, sets, workspace,
                                        Plan(timing, timeout_s, runner.device, recorded, launch), judging.against() if judging else NOTHING)
        outcome.status, outcome.reason, outcome.input_set = evaluation.status, evaluation.reason, evaluation.input_set
        if evaluation.status in ("WRONG", "NAN", "NONDETERMINISTIC", "OUT_OF_BOUNDS", "IMPOSSIBLE"):
            runner.discard("verdict")  # its code misbehaved: a warm process it ran in is not trusted with the next
        outcome.device_name = evaluation.device  # refused or not, the device its worker reported
        if evaluation.timing is not None:
            outcome.kernel, outcome.samples_s = summarize(evaluation.timing.kernel_s), evaluation.timing.kernel_s
        return outcome
    except BudgetExhausted:
        outcome.finished, outcome.reason = False, "the device-second budget ran out before this candidate finished"
        return outcome
    finally:
        shutil.rmtree(out, ignore_errors=True)
        clock.add("other", time.perf_counter() - started_run - outcome.device_s)
        outcome.phases_s = clock.rounded()

