"""One measurement of a campaign: a job run on a slot beside its reference (ab.trial) under the noise band that
reference's A/A set, measured once more when its reference ran wrecked, and recorded with its decision and device time."""

from __future__ import annotations

import datetime as dt
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.keys import measurement_key
from hyperloom.tools.optimize.models import TIMED, Decision, OptimizeRequest, Phase, Record
from hyperloom.tools.optimize.order import TUNERS
from hyperloom.tools.optimize.session import Session
from hyperloom.tools.optimize.slots import Slot
from hyperloom.tools.optimize.stops import AFTER_SEARCH, SEARCH, Stopped, StopRules
from hyperloom.tools.workload.ab import ABSettings, Against, Candidate, Plan, calibrated, disturbed, load_outputs, target_with, trial
from hyperloom.tools.workload.checks.clock_checks import paired_pace
from hyperloom.tools.workload.gate.frozen import references as frozen_references
from hyperloom.tools.workload.levers import prepared
from hyperloom.tools.workload.models import CandidateResult
from hyperloom.tools.workload.process import CUT
from hyperloom.tools.workload.spare import Where

SAME_STACK = ("A/A of the stack: a second worker doing the stack's own work against the first; its gap sets the noise band of trials "
              "against this stack")
WRECKED_PACE = 3.0  # a search trial whose reference ran this many times its solo pace is measured again (once)


@dataclass
class Job:
    key: str
    phase: Phase
    levers: list[str]
    reference: list[str]
    new: list[str]
    proposer: str
    note: str = ""
    point: dict[str, str] | None = None
    fallback: list[str] | None = None


class Measurement:
    """How a campaign measures: `settings` (the A/B's, paced and calibrated by the baseline phase), the stop rules'
    cut times, and `recorded`, told after each record."""

    def __init__(self, session: Session, workspace: Workspace, stops: StopRules, settings: ABSettings,
                 recorded: Callable[[], None]) -> None:
        self.session, self.workspace, self.stops, self.settings, self.recorded = session, workspace, stops, settings, recorded
        self.ledger, self.frozen, self.request = session.ledger, session.frozen, stops.request

    def key(self, kind: str, reference: list[str], levers: list[str], point: dict[str, str] | None = None) -> str:
        return measurement_key(kind, reference, levers, point, self.workspace)

    def band_for(self, slot: Slot, reference: list[str]) -> ABSettings:
        """The A/B settings of a trial against `reference`: against the baseline, the band its A/A set; against a stack,
        the band an A/A of that stack sets (once a stack, in the ledger, so a resume reads it). Each process keeps its
        own pace, and the pace spread differs by what a step runs (docs/decisions.md: The band of a stack's own A/A).
        If the stack's A/A could not be timed, the baseline's band stays."""
        if not reference:
            return self.settings
        same = self.same_work(slot, reference, SAME_STACK, None)
        if same.result.speedup is None:
            return self.settings
        return calibrated(replace(self.settings, noise_band=OptimizeRequest.noise_band), same.result)

    def same_work(self, slot: Slot, reference: list[str], note: str, solo_s: float | None) -> Record:
        """The A/A against `reference` (its gap sets the noise band), measured again once when it was disturbed (ab.disturbed:
        the reference slowed beside it, or either side at two paces): such an A/A sets a band under which no honest
        lever could be kept (docs/decisions.md: A disturbed A/A, a wrecked trial). The second is used when it is steady,
        or when its gap is the smaller; both are recorded and the choice noted."""
        key = self.key("same_work", reference, [])
        first = self.ledger.find(key) or self.measure(slot, Job(key, "baseline", reference, reference, [], "campaign", note),
                                                      lambda r: "MEASURED")
        why = disturbed(first.result, solo_s)
        if why is None:
            return first
        key = self.key("same_work_again", reference, [])
        again = self.ledger.find(key)
        if again is None:
            again = self.measure(slot, Job(key, "baseline", reference, reference, [], "campaign",
                                           f"{note} (again: the first was disturbed)"),
                                 lambda r: "MEASURED")
            self.ledger.add_note(f"the A/A against {' + '.join(reference) or 'the baseline'} was disturbed ({why}): measured again, "
                                 f"{_gap(first.result)} then {_gap(again.result)}")
        steady = disturbed(again.result, solo_s) is None
        if again.result.speedup is not None and (steady or first.result.speedup is None
                                                 or abs(again.result.speedup - 1) < abs(first.result.speedup - 1)):
            return again
        return first

    def wrecked(self, job: Job, result: CandidateResult) -> str | None:
        """Why a trial says nothing of its candidate, or None: its reference's paired legs ran beyond WRECKED_PACE times
        the reference's own pace (solo_s; docs/decisions.md: A disturbed A/A, a wrecked trial). Such a trial is measured
        once more."""
        pace = paired_pace(result.baseline_legs_s, self.solo_s(job))
        if pace is None or result.verdict not in TIMED:
            return None
        return f"the reference ran at {pace:.3g}x its solo pace in the pairs" if pace > WRECKED_PACE else None

    def solo_s(self, job: Job) -> float | None:
        """The reference's own pace, against which its paired legs far slower are named (ab.trial) and a wrecked trial
        measured again: the baseline's step alone (its legs before any candidate) for a trial against the pure baseline
        at its own point; for one against a stack, the stack's pace in its A/A (the steadier of the two where it was
        measured twice), so a kernel judged on a kept stack beside a slowed one is caught as a lever on the baseline is.
        None for the A/A itself and at another point."""
        if job.point is not None:
            return None
        if not job.reference:
            return self.ledger.solo_s()
        if job.levers == job.reference:
            return None  # the stack's A/A: what sets its pace
        return self.stack_pace_s(job.reference)

    def stack_pace_s(self, reference: list[str]) -> float | None:
        """A stack's step in its A/A against itself: the lower median of its reference's legs over the A/A and its
        re-measure, or None before the stack's A/A ran."""
        medians = [statistics.median(record.result.baseline_legs_s) for key in ("same_work", "same_work_again")
                   if (record := self.ledger.find(self.key(key, reference, []))) is not None and record.result.baseline_legs_s]
        return min(medians, default=None)

    def measure(self, slot: Slot, job: Job, decide: Callable[[CandidateResult], Decision]) -> Record:
        """Run `job` on `slot` beside its reference and record it with its decision and device time."""
        reference = slot.reference(job.reference, job.point)
        levers = prepared(job.levers, self.frozen.vendor, self.frozen.declared_knobs, self.workspace)
        references = (load_outputs(reference.outputs, list(self.frozen.tolerances)) if job.point is not None
                      else frozen_references(self.frozen))
        new = [item for item in levers if item.name in job.new]
        folder = slot.folder / job.key
        # an A/A decides nothing
        settings = replace(self.settings, max_pairs=None) if job.phase == "baseline" else self.band_for(slot, job.reference)
        ends_at = self.stops.ends_at(job.phase)
        if ends_at is not None:
            settings = replace(settings, deadline_at=ends_at)
        started = time.perf_counter()

        where = Where(target_with(self.frozen.target, levers, job.point), self.workspace, settings.timeout_s, slot.device, slot.backend)

        def run() -> CandidateResult:
            return trial(Candidate(job.levers, levers, new, idle_noted=job.phase == "sweep"),
                         Against(reference.process, reference.evidence, references, self.frozen.tolerances, self.solo_s(job)),
                         Plan(settings, folder, where, slot.spare))

        result = run()
        wrecked = self.wrecked(job, result)
        if wrecked is not None and job.phase in SEARCH and self.stops.room_for_a_trial():
            self.ledger.add_note(f"{job.phase} {' + '.join(job.levers)}: {wrecked}; its verdict ({result.verdict}) not kept, "
                                 "measured again")
            shutil.rmtree(folder, ignore_errors=True)
            result = run()
        device_s = time.perf_counter() - started
        shutil.rmtree(folder, ignore_errors=True)
        if result.verdict == "TIMEOUT" and CUT in result.reason:  # not a verdict on the candidate: unrecorded, so a resume runs it again
            self.ledger.add_spent(device_s, "trials")
            self.ledger.add_note(f"{job.phase} {' + '.join(job.levers) or 'A/A'} was {CUT} after {device_s:.0f} device-s "
                                 f"({' '.join(result.reason.split())}): "
                                 "not recorded; starting the campaign again runs it" + tuner_cut(job.levers, device_s, self.session.name))
            left_s = self.request.deadline_s - (time.monotonic() - self.stops.started) if self.request.deadline_s is not None else 0.0
            if job.phase in SEARCH and left_s > 0:
                raise Stopped(f"the search's last trial was cut {left_s:.0f} s before the wall-clock deadline, which {AFTER_SEARCH} needs",
                              hard=False)
            raise self.stops.deadline_reached()
        record = self.ledger.record(Record(seq=0, key=job.key, phase=job.phase, reference=job.reference, point=job.point,
                                           proposer=job.proposer, note=job.note, decision=decide(result), fallback=job.fallback,
                                           result=result, device=slot.label, device_s=device_s, finished_at=now()))
        self.recorded()
        return record


def _gap(result: CandidateResult) -> str:
    return f"{result.speedup:.3g}x" if result.speedup is not None else result.verdict


def tuner_cut(levers: list[str], ran_s: float, session: str) -> str:
    """What a tuning lever cut at the deadline would take, said beside the cut: its warm-up compiles and benchmarks every
    kernel choice (a ResNet-50's or a BERT's max-autotune takes minutes), which no deadline that fits a device command
    left it; Inductor keeps what it tuned in its cache on this machine (TORCHINDUCTOR_CACHE_DIR, else
    /tmp/torchinductor_USER), so a later try starts further on."""
    tuners = [lever for lever in levers if lever in TUNERS]
    if not tuners:
        return ""
    return (f"; {tuners[0]} tunes each kernel in its warm-up and needs more than the {ran_s:.0f} s it had: give it its time once with "
            f"`hyperloom workload bench --name {session} --candidate {tuners[0]} --timeout-s 1800`, or start the campaign again with a "
            "later deadline (Inductor's cache on this machine keeps what it tuned)")


def now() -> str:
    """When a record finished, as the ledger keeps it (UTC, ISO 8601)."""
    return dt.datetime.now(dt.timezone.utc).isoformat()
