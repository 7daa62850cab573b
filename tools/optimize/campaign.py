"""The campaign over one frozen workload, phase by phase; every measurement is a workload A/B (tools/workload/ab.py):
gated on the frozen outputs, checked for engagement, interleaved beside a live reference, judged with a sign test.

- baseline: the baseline's step timed alone until its median is tight (the workload was frozen before), then a
  second worker doing the same work timed against it (A/A): its gap widens the noise band of the trials against
  the baseline; a trial against a stack is judged by the band of that stack's own A/A, measured once a stack;
- levers: every applicable lever alone against the baseline (cheapest first; independent, so spread over the slots);
  FASTER ones are WINNERs;
- combine: the fastest winner is kept; each other winner is tried on top of the stack, A/B-timed against the stack
  itself (not against the baseline), and KEEP or REVERT;
- kernels: the agent's proposals (optimize_propose: any lever strings, `overrides:` modules included), each stacked
  and judged the same way;
- after each KEEP, the whole stack re-timed as one candidate against the pure baseline (revalidate): the gain the
  campaign reports is this measurement, never a product of per-change gains; a stack that fails it is reverted;
- sweep: the final stack against the baseline at each point the workload declares (`points`: knob values), gated
  there on the baseline's own outputs at that point.

Every measurement is keyed (phase kind, reference, levers with file contents hashed, point) and recorded once, so a
resumed campaign repeats nothing and a killed one loses only what was in flight. A crash, a timeout or outputs out of
tolerance is a recorded verdict, and the campaign goes on.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shorten import at_clause
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.applies import STACK_MAY_BRING, brought, present, unmet
from hyperloom.tools.optimize.keys import conflict, measurement_key, stacked
from hyperloom.tools.optimize.models import Decision, OptimizeRequest, Phase, Record, stack_of
from hyperloom.tools.optimize.proposals import NOTE_PREFIX, ProfileProposals, profile_proposals
from hyperloom.tools.optimize.session import Session
from hyperloom.tools.optimize.slots import Slot, Slots, device_slots
from hyperloom.tools.pipeline.stats import summarize
from hyperloom.tools.workload.gate import twin
from hyperloom.tools.workload.ab import LEG_FILL_S, LEG_MAX_S, ABSettings, baseline_legs, calibrated, disturbed, load_outputs, paced, target_with, trial
from hyperloom.tools.workload.freeze import refusal
from hyperloom.tools.workload.gate.frozen import references as frozen_references
from hyperloom.tools.workload.levers import BY_NAME, CATALOG, EXCLUSIVE_KINDS, GPU, Lever, check_candidate, prepared
from hyperloom.tools.workload.models import CandidateResult
from hyperloom.tools.workload.process import CUT, WorkloadFailure
from hyperloom.tools.workload.checks.clock_checks import paired_pace

POLL_S = 0.2
BASELINE_CI = 0.02
BASELINE_MAX_LEGS = 30
# the solo legs' time past the first six: on the H100 a 1.2B decoder's eager generate (1.17 s a step) spent 103 device-s
# there, a fifth of its campaign, on a figure no verdict reads (the pairs judge)
BASELINE_MAX_S = 30.0
TIMED = ("FASTER", "NOT_FASTER")
SAME_WORK = "A/A: a second worker doing the baseline's own work against the first; its gap is process noise and widens the noise band"
SAME_STACK = "A/A of the stack: a second worker doing the stack's own work against the first; its gap sets the noise band of trials against this stack"
LOOKS = 3  # rounds of `pairs` an undecided candidate may get (ab.ABSettings.max_pairs), each look judged at ALPHA / 3
UNSTEADY = 1.5  # a kept gain this many times its revalidation is noted as unsteady
WRECKED_PACE = 3.0  # a search trial whose reference ran this many times its solo pace is measured again (once)
RIVALS = 2  # at most this many winners revalidated alone against a stack whose revalidation fell below them
NOT_RUN = "its need was not in the baseline: not run alone"
AFTER_SEARCH = "what follows it (keeping the best winner, a rival's revalidation, the sweep)"
DEADLINE_GRACE_S = 20.0  # a trial still running at the deadline gets this long to answer, then its workers are killed
SEARCH: frozenset[Phase] = frozenset({"levers", "combine", "kernels"})  # the phases a stop rule may end early (what follows: settle, the sweep)
# cheapest first: a knob costs a build, a compile minutes
TUNERS = frozenset({"tunableop", "compile_max_autotune", "compile_max_autotune_no_cudagraphs", "inductor_coordinate_descent"})  # tried last, whatever their kind
COST = {"knob": 0, "setting": 1, "stance": 1, "layout": 1, "fusion": 1, "quantize": 1, "kernel": 1, "cache": 2, "env": 2, "sdpa": 3, "graph": 4, "compile": 5, "generate": 5}


@dataclass
class Control:
    """How a front end steers a running campaign: a stop flag, and whether it opened."""

    stop: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)


class Stopped(Exception):
    """A stop rule fired. `hard` (stop, budget, deadline): nothing more runs; else only the search ends (the sweep runs)."""

    def __init__(self, reason: str, hard: bool) -> None:
        super().__init__(reason)
        self.reason, self.hard = reason, hard


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


class Campaign:
    def __init__(self, session: Session, request: OptimizeRequest, workspace: Workspace, control: Control, progress: ProgressFn | None = None) -> None:
        self.session, self.request, self.workspace, self.control, self.progress = session, request, workspace, control, progress
        self.ledger, self.frozen = session.ledger, session.frozen
        # an undecided candidate gets up to twice its pairs again (ab.paired): on the H200 one read 1.09x over 6 pairs and 0.993x over 16
        self.settings = ABSettings(request.pairs, request.steps_per_leg, OptimizeRequest.warmup_steps, OptimizeRequest.noise_band, request.timeout_s,
                                   max_pairs=LOOKS * request.pairs)
        self.started = time.monotonic()
        self.planned = 0  # candidates the campaign plans to try, for its progress (report_progress)
        # levers omitted on a resume: those the campaign was started with (else every applicable one)
        self.chosen = request.levers if request.levers is not None else self.ledger.get_json("request", {}).get("levers")

    # state -------------------------------------------------------------------------------------
    def key(self, kind: str, reference: list[str], levers: list[str], point: dict[str, str] | None = None) -> str:
        return measurement_key(kind, reference, levers, point, self.workspace)

    def stack(self) -> list[str]:
        return stack_of(self.ledger.records())

    def candidates(self) -> list[Record]:
        return [r for r in self.ledger.records() if r.phase in ("levers", "combine", "kernels") and r.device_s > 0]

    def set_phase(self, phase: Phase) -> None:
        self.ledger.set("phase", phase)

    # stop rules ----------------------------------------------------------------------------------
    def check(self) -> None:
        """The hard rules, before any measurement: a stop request, the device-hour budget, the deadline."""
        if self.control.stop.is_set() or self.ledger.get("stop_requested"):
            raise Stopped("stopped on request (optimize stop)", hard=True)
        spent = self.ledger.spent_s()
        if spent >= self.request.budget_device_s:
            raise Stopped(f"device-hour budget spent ({spent:.1f} of {self.request.budget_device_s:g} device-s)", hard=True)
        if self.request.deadline_s is not None and time.monotonic() - self.started >= self.request.deadline_s:
            raise self.deadline_reached()

    def deadline_reached(self) -> Stopped:
        return Stopped(f"wall-clock deadline of {self.request.deadline_s or 0:g} s reached", hard=True)

    def check_search(self) -> None:
        """The hard rules, then those that end the search (the sweep still runs): count, patience, target."""
        self.check()
        tried = self.candidates()
        if len(tried) >= self.request.max_candidates:
            raise Stopped(f"reached max_candidates ({self.request.max_candidates})", hard=False)
        if self.request.patience is not None:
            since = 0
            for record in tried:
                since = 0 if record.decision in ("KEEP", "WINNER") else since + (record.result.verdict in TIMED)
            if since >= self.request.patience:
                raise Stopped(f"patience: {since} timed candidates in a row without a gain beyond the noise band", hard=False)
        gain = self.gain()
        if self.request.target_speedup is not None and gain is not None and gain >= self.request.target_speedup:
            raise Stopped(f"reached the target speedup of {self.request.target_speedup:g}x ({gain:.3g}x measured)", hard=False)
        left_s = None if self.request.deadline_s is None else self.request.deadline_s - (time.monotonic() - self.started)
        why = sweep_reserve(self.sweep_reserve_s(), left_s, self.request.budget_device_s - self.ledger.spent_s())
        if why is not None:
            raise Stopped(why, hard=False)

    def sweep_reserve_s(self) -> float:
        """What the campaign needs when it ends its search now: what follows the search (after_search_s), and when any
        of that is due, the trial the search is about to start (on the H200 a 66 s trial started with 53 s left left
        none for settle)."""
        after_s, mean_s = self.after_search_s(), self.mean_trial_s()
        return after_s + mean_s if after_s and mean_s else 0.0

    def after_search_s(self) -> float:
        """What the campaign still needs after its search, each trial at the mean device time of the trials so far (a
        sweep trial builds both sides at the point, as a candidate trial does): with winners but no stack yet, the
        best winner's revalidation (settle) and, with another winner, one rival's (a stack whose revalidation falls
        short tries the next winner alone: on the H200 a conv net's did not hold, and its rival found no time); with a
        stack, its points not yet swept."""
        points = self.ledger.get_json("baseline", {}).get("points", [])
        mean_s = built_trial_s(self.ledger.records())
        if mean_s is None:
            return 0.0
        stack, winners = self.stack(), self.winners()
        if stack:
            settle = int(self.gain() is None)  # its revalidation, if still due (cut or killed before a resume)
        else:
            settle = 1 + (len(winners) > 1) if winners else 0
        stack = stack or (winners[0].result.levers if winners else [])
        valid = [p for p in (_point(raw, self.frozen.declared_knobs) for raw in points) if p is not None] if stack else []
        left = settle + sum(self.ledger.find(self.key("sweep", [], stack, point)) is None for point in valid)
        return left * mean_s

    def ends_at(self, phase: Phase) -> float | None:
        """time.monotonic() at which a trial of `phase` is cut: a search trial where what follows the search must start
        (after_search_s before the deadline: a max-autotune compile that runs to its timeout cannot take the time
        keeping a winner needs; no grace added: on the H200 the grace put a conv net's cut past the deadline, and its eight
        winners ended with nothing kept), any other at the deadline with DEADLINE_GRACE_S to answer. None: no deadline."""
        if self.request.deadline_s is None:
            return None
        deadline = self.started + self.request.deadline_s
        after_s = self.after_search_s() if phase in SEARCH else 0.0
        return deadline - after_s if after_s else deadline + DEADLINE_GRACE_S

    def mean_trial_s(self) -> float | None:
        """The mean device seconds of the trials so far (the baseline's own left out), or None before the first."""
        trials = [r.device_s for r in self.ledger.records() if r.device_s > 0 and r.phase != "baseline"]
        return sum(trials) / len(trials) if trials else None

    def winners(self) -> list[Record]:
        """The levers phase's winners, fastest first (fastest_first)."""
        return fastest_first([r for r in self.ledger.records() if r.phase == "levers" and r.decision == "WINNER"])

    def settle(self, slot: Slot) -> None:
        """After a search that ended early (count, patience, the time the rest needs) with winners but nothing kept yet:
        the fastest winner kept and revalidated, as combine's first step would, so that a campaign cut in its levers
        phase still reports what it found."""
        winners = self.winners()
        if self.stack():
            self.revalidate_pending(slot)
            return
        if not winners:
            return
        self.set_phase("combine")
        self.keep_first(winners[0])
        self.revalidate(slot, [])
        self.rivals(slot)

    def gain(self) -> float | None:
        stack = self.stack()
        found = [r for r in self.ledger.records() if r.phase == "revalidate" and r.decision == "MEASURED" and r.result.levers == stack]
        return found[-1].result.speedup if found and stack else None

    # the loop -----------------------------------------------------------------------------------
    def run(self) -> str:
        """Every phase to its end or a stop rule; the stop reason."""
        self.ledger.clear("stop_requested")
        self.ledger.clear("closed_at")
        self.ledger.set("state", "running")
        self.ledger.set("pid", str(os.getpid()))
        self.ledger.set_json("request", {**self.request.model_dump(mode="json"), "levers": self.chosen})
        devices = device_slots(self.frozen.vendor, self.request.devices)
        reason = "every phase ran to its end"
        try:
            with Slots(devices, self.frozen, self.settings, self.session.folder / "runs", self.workspace, self.reference_started) as slots:
                self.control.opened.set()
                try:
                    self.baseline(slots.first)
                    try:
                        self.levers(slots)
                        self.combine(slots.first)
                        self.kernels(slots.first)
                    except Stopped as stop:
                        if stop.hard:
                            raise
                        reason = stop.reason
                        self.settle(slots.first)
                    self.sweep(slots.first)
                except Stopped as stop:
                    reason = stop.reason
        except WorkloadFailure as failure:  # a reference worker (the baseline or the stack) failed: nothing can be judged
            reason = f"error: {refusal(failure, self.frozen.target.workload, self.request.timeout_s)}"
        except HyperloomError as exc:
            reason = f"error: {exc}"
        finally:
            self.control.opened.set()
            self.ledger.set("state", "stopped")
        self.ledger.set("stop_reason", reason)
        shutil.rmtree(self.session.folder / "runs", ignore_errors=True)
        self.report_progress(final=True)
        return reason

    def reference_started(self, levers: list[str], point: dict[str, str] | None, parts_s: dict[str, float]) -> None:
        """A reference worker's start charged to "references", and noted with its parts: what a resume pays again."""
        spent_s = sum(parts_s.values())
        self.ledger.add_spent(spent_s, "references")
        at = f" at {', '.join(f'{k}={v}' for k, v in point.items())}" if point else ""
        self.ledger.add_note(f"reference {' + '.join(levers) or 'baseline'}{at} started in {spent_s:.1f} s ("
                             + ", ".join(f"{part} {seconds:.1f} s" for part, seconds in parts_s.items()) + ")")

    def baseline(self, slot: Slot) -> None:
        self.set_phase("baseline")
        self.check()
        base = slot.reference([])
        if self.ledger.get("baseline") is None:
            started = time.perf_counter()
            solo = baseline_legs(base.process, self.settings.steps_per_leg, BASELINE_CI, BASELINE_MAX_LEGS, max_s=BASELINE_MAX_S)
            self.ledger.add_spent(time.perf_counter() - started, "solo legs")
            info = base.info
            evidence = measured("optimize", device=info["device"] or host_device(), target=info["vendor"], toolchain=info["toolchain"],
                                inputs_sha256=combine_digests([self.frozen.manifest_sha256, sha256_json(self.request.model_dump(mode="json"))]))
            self.ledger.set_json("baseline", {"stats": summarize(solo.legs_s).model_dump(), "device_step_s": solo.device_step_s,
                                              "inputs_step_s": solo.inputs_step_s, "wall_step_s": solo.wall_step_s, "figure": solo.figure,
                                              "points": info["points"],
                                              "knob_defaults": info["knob_defaults"], "evidence": evidence.model_dump(mode="json")})
        recorded = self.ledger.get_json("baseline", {})
        step_s = recorded["stats"]["median_s"]
        self.settings = paced(self.settings, step_s, recorded.get("inputs_step_s"))  # on a resume too
        if self.settings.steps_per_leg != self.request.steps_per_leg and not self.ledger.get("paced_noted"):
            inputs = f" and {recorded['inputs_step_s'] * 1e3:.4g} ms of inputs(seed)" if recorded.get("inputs_step_s") else ""
            self.ledger.add_note(f"{self.settings.steps_per_leg} step(s) a timed leg, not {self.request.steps_per_leg}: the baseline's step of "
                                 f"{step_s * 1e3:.4g} ms{inputs} (a leg holds at least {LEG_FILL_S * 1e3:g} ms of the model's time, at most "
                                 f"{LEG_MAX_S:g} s of wall time)")
            self.ledger.set("paced_noted", "yes")
        if not base.process.info["has_inputs"] and not self.request.fixed_inputs and not self.ledger.get("fixed_inputs_noted"):
            self.ledger.add_note("the workload has no inputs(seed): its inputs are fixed, so memoization is not excluded and no gain is kept; "
                                 "give the workload inputs(seed), or pass fixed_inputs true to keep gains measured on fixed inputs")
            self.ledger.set("fixed_inputs_noted", "yes")
        same = self.same_work(slot, [], SAME_WORK, step_s)
        self.settings = calibrated(self.settings, same.result)  # every later trial's noise band (ab.calibrated), on a resume too

    def applicable(self) -> list[str]:
        """The levers tried alone: those asked for, else every catalog lever for this vendor and each other value of a Literal knob."""
        if self.chosen is not None:
            return list(dict.fromkeys(self.chosen))
        defaults = self.ledger.get_json("baseline", {}).get("knob_defaults", {})
        knobs = [f"knob:{name}={value}" for name, values in self.frozen.declared_knobs.items() if values
                 for value in values if value != str(self.frozen.target.knobs.get(name, defaults.get(name)))]
        return knobs + catalog_order(self.frozen.vendor)

    def levers(self, slots: Slots) -> None:
        self.set_phase("levers")
        base = slots.first.reference([])
        jobs = []
        for name in self.applicable():
            try:
                [item] = check_candidate([name], self.frozen.vendor, self.frozen.declared_knobs)
            except HyperloomError as exc:
                self.ledger.add_note(f"lever {name} not tried: {exc.cause}")
                continue
            key = self.key("candidate", [], [name])
            if self.ledger.find(key) is not None:
                continue
            if item.lossy and self.chosen is None and not self.frozen.looser_twin_rule():
                self.ledger.add_note(f"lever {name} not tried: it changes numerics beyond the model's own ({item.lossy}); freeze with k above "
                                     f"{twin.DEFAULT_K:g} (the error against the float32 twin you accept, as a multiple of the model's own) to try "
                                     "it, or list it in levers")
                continue
            lacking = unmet(item, base.info["model_facts"], base.evidence)  # listed levers too: one that cannot act would come back NO_OP
            if lacking is None:
                jobs.append(Job(key, "levers", [name], [], [name], "catalog"))
            elif lacking.deferred:
                self.not_run(key, name, lacking.reason)
            elif not self.ledger.get(f"unmet:{name}"):
                self.ledger.add_note(f"lever {name} not tried: {lacking.reason}")
                self.ledger.set(f"unmet:{name}", "noted")
        self.planned = len(self.candidates()) + len(jobs)
        slots.run_many(jobs, self.lever_trial, self.check_search)

    def lever_trial(self, slot: Slot, job: Job) -> list[Job]:
        """One lever (or a winner with a follow-up) against the baseline, then its follow-ups when it is a WINNER or
        engaged alone without a gain (an enabler: a static cache no faster alone on a CPU): each lever waiting for what
        it brings (applies.py: a static cache for decode_loop, graph launches for decode_attention, compiled code for a
        stance or a quantization) tried with it at once, so that a campaign cut by its deadline has already measured the
        pair. Each waiting lever follows one lever only, the first (the cheapest that brings its need): four compiles
        each followed by three waiting levers, and by their pairs, made 22 candidates of a CPU decoder's campaign; the
        stack's retry (retry_on_stack) tries it again on what is kept. One of a kind a candidate holds once (a second
        quantization) is not a follow-up of a winner that has one."""
        record = self.measure(slot, job, lambda r: "WINNER" if self.keepable(r) else "DROPPED")
        if record.decision != "WINNER" and not engaged_without_gain(record):
            return []
        brings = brought(job.levers)
        follow = []
        tried = self.followed()
        kinds = {BY_NAME[name].kind for name in job.levers if name in BY_NAME}
        for waiting in self.waiting():
            if waiting.needs not in brings or waiting.name in job.levers or (waiting.kind in EXCLUSIVE_KINDS and waiting.kind in kinds):
                continue
            if any(waiting.name in levers for levers in tried):
                continue  # it followed another winner already
            names = job.levers + [waiting.name]
            try:
                check_candidate(names, self.frozen.vendor, self.frozen.declared_knobs)
            except HyperloomError as exc:
                self.ledger.add_note(f"{waiting.name} not tried with {' + '.join(job.levers)}: {exc.cause}")
                continue
            key = self.key("candidate", [], names)
            if self.ledger.find(key) is None:
                follow.append(Job(key, "levers", names, [], names, "catalog", f"{waiting.name} waited for what {' + '.join(job.levers)} brings"))
        return follow

    def followed(self) -> set[frozenset[str]]:
        """The lever sets the levers phase ran (follow-ups included)."""
        return {frozenset(r.result.levers) for r in self.ledger.records() if r.phase == "levers" and r.device_s > 0}

    def waiting(self) -> list[Lever]:
        """The levers recorded NO_OP without a run (not_run): their need a stack may bring."""
        return [BY_NAME[r.result.levers[0]] for r in self.ledger.records() if r.phase == "levers" and r.note == NOT_RUN]

    def not_run(self, key: str, name: str, reason: str) -> None:
        """A lever whose need only a stack can bring, recorded NO_OP without a worker (no device time), so that
        retry_on_stack tries it on the stack."""
        result = CandidateResult(levers=[name], verdict="NO_OP", reason=f"not run alone: {reason}; tried on the stack once one is kept")
        self.ledger.record(Record(seq=0, key=key, phase="levers", reference=[], proposer="catalog", note=NOT_RUN, decision="DROPPED", result=result,
                                  device="none", device_s=0.0, finished_at=_now()))

    def combine(self, slot: Slot) -> None:
        self.set_phase("combine")
        self.revalidate_pending(slot)
        for winner in self.winners():
            stack = self.stack()
            if set(winner.result.levers) <= set(stack):
                continue
            if not stack:
                self.keep_first(winner)
            else:
                self.check_search()
                if not self.try_on_stack(slot, stack, winner.result.levers, "combination", f"winner #{winner.seq} on the stack"):
                    continue
            self.revalidate(slot, stack)
        self.rivals(slot)
        self.retry_on_stack(slot)

    def rivals(self, slot: Slot) -> None:
        """The winners that measured alone above the stack's revalidated gain (beyond the noise band), each revalidated
        alone against the baseline, at most RIVALS of them, fastest first; one that revalidates above the stack replaces
        it. On the H200 a reduce-overhead compile of ResNet-50 was kept at 2.37x and revalidated at 1.22x while compile
        alone had measured 1.95x: the kept figure did not hold, the runner-up may. The order is rival_order's. Each
        needs the time of one more trial before the deadline; without it the rival is noted, not tried."""
        tried = 0
        for winner in rival_order(self.winners(), self.stack()):
            stack, gain = self.stack(), self.gain()
            if not stack or gain is None or set(winner.result.levers) <= set(stack):
                continue
            if (winner.result.speedup or 0) <= gain * (1 + self.settings.noise_band):
                continue  # it cannot beat the stack (a rival kept meanwhile raised the bar)
            if tried == RIVALS:
                return
            levers = winner.result.levers
            if not self.room_for_a_trial():
                self.ledger.add_note(f"{' + '.join(levers)} ({winner.result.speedup:.3g}x alone) was not revalidated against the stack's "
                                     f"{gain:.3g}x: no time left before the deadline for one more trial")
                return
            self.check()
            key = self.key("revalidate", [], levers)
            note = f"winner #{winner.seq} ({winner.result.speedup:.3g}x alone) against {' + '.join(stack)}'s revalidated {gain:.3g}x"
            record = self.ledger.find(key) or self.measure(slot, Job(key, "revalidate", levers, [], levers, "campaign", note, fallback=stack),
                                                          lambda r: "MEASURED" if r.verdict in TIMED and (r.speedup or 0) >= 1 else "REGRESSION")
            tried += 1
            keep = self.key("keep", [], levers)
            if record.decision == "MEASURED" and (record.result.speedup or 0) > gain and self.ledger.find(keep) is None:
                self.ledger.record(Record(seq=0, key=keep, phase="combine", reference=[], proposer="campaign",
                                          note=f"revalidated at {record.result.speedup:.3g}x, above {' + '.join(stack)}'s {gain:.3g}x: replaces it",
                                          decision="KEEP", result=record.result, device=record.device, device_s=0.0, finished_at=_now()))

    def room_for_a_trial(self) -> bool:
        """Whether one more trial, at the mean device time of those so far, ends before the deadline."""
        mean_s = self.mean_trial_s()
        if self.request.deadline_s is None or mean_s is None:
            return True
        return time.monotonic() - self.started + mean_s < self.request.deadline_s

    def retry_on_stack(self, slot: Slot) -> None:
        """Once on the stack, each lever that took no effect on the baseline (what it acts on, compiled graphs, CUDA
        graphs, float32 matmuls, may be there now) and each that engaged there without being faster when the stack
        replays graphs and the baseline did not (engaged_without_gain). Novelty keeps each (stack, lever) to one measurement."""
        base_graphs = "graph_launch" in present(slot.reference([]).evidence)
        for record in [r for r in self.ledger.records() if r.phase == "levers" and r.result.verdict in ("NO_OP", "NOT_FASTER")]:
            stack = self.stack()
            if not stack or set(record.result.levers) <= set(stack):
                continue
            if record.result.verdict == "NOT_FASTER":
                if base_graphs or not engaged_without_gain(record) or not self.replays_graphs(slot, stack):
                    continue
                why = f"#{record.seq} engaged on the baseline but was not faster there (the host bounds an eager step); on a stack that replays graphs it may be"
            else:
                lever = BY_NAME.get(record.result.levers[0])  # None: a knob or an overrides module, which needs nothing
                need = lever.needs if lever is not None else None
                if record.note == NOT_RUN and need not in brought(stack) and (need not in STACK_MAY_BRING or need not in present(slot.reference(stack).evidence)):
                    continue  # what it waits for is not on the stack either (by the catalog, nor in the stack's profiled step)
                why = f"#{record.seq} took no effect on the baseline; on the stack it may"
            if frozenset(stacked(stack, record.result.levers)) in self.followed():
                continue  # measured as a winner's follow-up already: the same candidate
            self.check_search()
            if self.try_on_stack(slot, stack, record.result.levers, "combination", why):
                self.revalidate(slot, stack)

    def replays_graphs(self, slot: Slot, stack: list[str]) -> bool:
        """Whether `stack` launches CUDA/HIP graphs: by the catalog (what its levers bring) or in its reference's profiled step."""
        return "graph_launch" in brought(stack) or "graph_launch" in present(slot.reference(stack).evidence)

    def kernels(self, slot: Slot) -> None:
        """The agent's proposals, stacked one at a time; waits up to proposal_wait_s for the next one."""
        self.set_phase("kernels")
        self.propose_from_profile(weight_bytes(slot.reference([]).evidence))
        waiting_since = time.monotonic()
        while True:
            self.check_search()
            queued = self.ledger.queued()
            if not queued:
                if time.monotonic() - waiting_since >= self.request.proposal_wait_s:
                    return
                time.sleep(POLL_S)
                continue
            proposal_id, levers, note = queued[0]
            stack = self.stack()
            if self.try_on_stack(slot, stack, levers, "profile" if note.startswith(NOTE_PREFIX) else "agent", note):
                self.revalidate(slot, stack)
            self.ledger.take(proposal_id)  # after its record: a campaign killed mid-trial runs it again on resume
            waiting_since = time.monotonic()

    def propose_from_profile(self, bytes_per_replay: int | None = None) -> None:
        """Once a campaign (a resume does not profile again): the library kernels the workload's profile, run with the
        stack's knobs, can take, queued as proposals; its GPU busy share noted (what kernels can act on at most), and a
        replayed graph's period split into its parts (a decode token's: against `bytes_per_replay`, the model's weights
        read once). On a GPU unless the request says otherwise; the profile's time counts as device time."""
        wanted = self.request.profile_kernels if self.request.profile_kernels is not None else self.frozen.vendor in GPU
        if not wanted or self.ledger.get("profiled") is not None:
            return
        self.check_search()
        started = time.perf_counter()
        try:
            found = profile_proposals(self.frozen, self.session.name, self.workspace, self.request.timeout_s, self.stack(), bytes_per_replay)
        except HyperloomError as exc:
            self.ledger.add_note(f"the profile for kernel proposals failed, none proposed: {exc.cause}")
            found = ProfileProposals()
        finally:
            self.ledger.add_spent(time.perf_counter() - started, "profile")
        for note in found.notes:
            self.ledger.add_note(note)
        queued = {tuple(sorted(levers)) for _, levers, _ in self.ledger.queued()}
        for levers, note in found.proposals:
            if tuple(sorted(levers)) not in queued:  # a campaign killed after proposing, before this mark: not twice
                self.ledger.propose(levers, note)
        self.ledger.set("profiled", found.profile_json or "failed")

    def keepable(self, result: CandidateResult) -> bool:
        """A FASTER that the campaign may keep: measured on fresh inputs, or on fixed ones with the caller's consent
        (`fixed_inputs`): an unattended campaign does not keep what a memo could have faked."""
        return result.verdict == "FASTER" and (result.inputs_fresh is not False or self.request.fixed_inputs)

    def keep_first(self, winner: Record) -> None:
        """The fastest single lever starts the stack: its own measurement against the baseline is the evidence."""
        key = self.key("keep", [], winner.result.levers)
        if self.ledger.find(key) is None:
            self.ledger.record(Record(seq=0, key=key, phase="combine", reference=[], proposer="campaign", note=f"the fastest single lever (#{winner.seq})",
                                      decision="KEEP", result=winner.result, device=winner.device, device_s=0.0, finished_at=_now()))

    def try_on_stack(self, slot: Slot, stack: list[str], levers: list[str], proposer: str, note: str) -> bool:
        """`levers` on top of `stack`, A/B-timed against the stack; True when kept."""
        candidate = stacked(stack, levers)
        new = [n for n in candidate if n not in stack]
        why = conflict(stack, new) if new else "every lever is on the stack already"
        if why is None:
            try:
                check_candidate(candidate, self.frozen.vendor, self.frozen.declared_knobs)
            except HyperloomError as exc:
                why = exc.cause
        if why is not None:
            self.ledger.add_note(f"{' + '.join(levers)} not tried on {' + '.join(stack) or 'the baseline'}: {why}")
            return False
        phase: Phase = "kernels" if proposer in ("agent", "profile") else "combine"
        key = self.key("candidate", stack, candidate)
        record = self.ledger.find(key) or self.measure(slot, Job(key, phase, candidate, stack, new, proposer, note),
                                                      lambda r: "KEEP" if self.keepable(r) else "REVERT")
        return record.decision == "KEEP"

    def revalidate(self, slot: Slot, previous: list[str]) -> None:
        """The whole stack against the pure baseline; a stack not faster than it is reverted to `previous`. The phase
        reads revalidate while it runs, then the phase it interrupted again."""
        interrupted = self.ledger.get("phase")
        self.set_phase("revalidate")
        try:
            self._revalidate(slot, previous)
        finally:
            if interrupted:
                self.set_phase(interrupted)

    def revalidate_pending(self, slot: Slot) -> None:
        """A stack kept and never revalidated (its revalidation cut by the deadline, or the campaign killed in it):
        revalidated before anything is stacked on it, reverted to what it was kept on if it fails. On the H100 a 1.2B
        decoder's campaign killed in that revalidation was resumed, ran its last levers to the deadline and closed with
        its stack "not revalidated yet"."""
        stack = self.stack()
        if not stack or self.gain() is not None:
            return
        kept = next((r for r in reversed(self.ledger.records()) if r.decision == "KEEP" and r.result.levers == stack), None)
        self.revalidate(slot, kept.reference if kept is not None else [])

    def _revalidate(self, slot: Slot, previous: list[str]) -> None:
        self.check()
        stack = self.stack()
        key = self.key("revalidate", [], stack)
        if self.ledger.find(key) is None:
            def decide(result: CandidateResult) -> Decision:
                return "MEASURED" if result.verdict in TIMED and (result.speedup or 0) >= 1 else "REGRESSION"
            record = self.measure(slot, Job(key, "revalidate", stack, [], stack, "campaign", "the whole stack against the baseline", fallback=previous), decide)
            if record.decision == "REGRESSION":
                self.ledger.add_note(f"the stack {' + '.join(stack)} failed its revalidation ({record.result.verdict}: {at_clause(record.result.reason, 200, 'breakdown.json')}); "
                                     f"reverted to {' + '.join(previous) or 'the baseline'}")
            else:
                self.note_unsteady(stack, record.result.speedup)

    def note_unsteady(self, stack: list[str], revalidated: float | None) -> None:
        """A note when the whole stack re-timed against the baseline reads far below the gain it was kept on (on the
        H200 a reduce-overhead compile of ResNet-50: kept at 2.37x, revalidated at 1.22x): that gain does not hold
        from one worker to the next, and the report says so beside the figure."""
        kept = next((r for r in reversed(self.ledger.records()) if r.decision == "KEEP" and r.result.levers == stack), None)
        if kept is None or kept.reference or not kept.result.speedup or not revalidated:
            return
        if kept.result.speedup > UNSTEADY * revalidated:
            self.ledger.add_note(f"the stack {' + '.join(stack)} was kept at {kept.result.speedup:.3g}x against the baseline and revalidated at "
                                 f"{revalidated:.3g}x: its gain does not hold from one pair of workers to the next (a graph re-recorded, a "
                                 "compile that differs per process?); run the campaign again or profile the stack before trusting either figure")

    def sweep(self, slot: Slot) -> None:
        """The stack at each declared point against the baseline at it, while a trial fits before the deadline (on the
        H100 a point started 20 s before it spent 51 device-s building its references and was cut, unrecorded)."""
        self.set_phase("sweep")
        stack = self.stack()
        points = self.ledger.get_json("baseline", {}).get("points", [])
        if not stack or not points:
            return
        for raw in points:
            point = _point(raw, self.frozen.declared_knobs)
            if point is None:
                self.ledger.add_note(f"sweep point {str(raw)[:80]} skipped: a point is a dict of the workload's knobs and their values")
                continue
            self.check()
            key = self.key("sweep", [], stack, point)
            if self.ledger.find(key) is not None:
                continue
            if not self.room_for_a_trial():
                self.ledger.add_note(f"sweep of {' + '.join(stack)} at {', '.join(f'{k}={v}' for k, v in point.items())} not started: no time left "
                                     "before the deadline for one more trial (its references at the point are built first); start the campaign again to sweep it")
                return
            self.measure(slot, Job(key, "sweep", stack, [], stack, "campaign", "the final stack at a declared point", point),
                         lambda r: "MEASURED" if r.verdict in TIMED and (r.speedup or 0) >= 1 - self.settings.noise_band else "REGRESSION")

    # one measurement ----------------------------------------------------------------------------
    def band_for(self, slot: Slot, reference: list[str]) -> ABSettings:
        """The A/B settings of a trial against `reference`: against the baseline, the band its A/A set; against a stack,
        the band an A/A of that stack sets (once a stack, in the ledger, so a resume reads it). Each process keeps its
        own pace, and the pace spread differs by what a step runs: on the H200 the eager baseline's A/A read 0.759x,
        a 24 % band that then judged kernels against a graph-replayed stack. If the stack's A/A could not be timed,
        the baseline's band stays."""
        if not reference:
            return self.settings
        same = self.same_work(slot, reference, SAME_STACK, None)
        if same.result.speedup is None:
            return self.settings
        return calibrated(replace(self.settings, noise_band=OptimizeRequest.noise_band), same.result)

    def same_work(self, slot: Slot, reference: list[str], note: str, solo_s: float | None) -> Record:
        """The A/A against `reference` (its gap sets the noise band), measured again once when it was disturbed (ab.disturbed:
        the reference slowed beside it, or either side at two paces): on a loaded CPU the first legs after a worker is
        served ran 3-5x slow, and such an A/A set bands of 33-115 %, under which no honest lever could be kept. The
        second is used when it is steady, or when its gap is the smaller; both are recorded and the choice noted."""
        key = self.key("same_work", reference, [])
        first = self.ledger.find(key) or self.measure(slot, Job(key, "baseline", reference, reference, [], "campaign", note), lambda r: "MEASURED")
        why = disturbed(first.result, solo_s)
        if why is None:
            return first
        key = self.key("same_work_again", reference, [])
        again = self.ledger.find(key)
        if again is None:
            again = self.measure(slot, Job(key, "baseline", reference, reference, [], "campaign", f"{note} (again: the first was disturbed)"),
                                 lambda r: "MEASURED")
            self.ledger.add_note(f"the A/A against {' + '.join(reference) or 'the baseline'} was disturbed ({why}): measured again, "
                                 f"{_gap(first.result)} then {_gap(again.result)}")
        steady = disturbed(again.result, solo_s) is None
        if again.result.speedup is not None and (steady or first.result.speedup is None or abs(again.result.speedup - 1) < abs(first.result.speedup - 1)):
            return again
        return first

    def wrecked(self, job: Job, result: CandidateResult) -> str | None:
        """Why a trial says nothing of its candidate, or None: its reference's paired legs ran beyond WRECKED_PACE times
        the reference's own pace (solo_s: on a loaded CPU one ran 99x and its candidate, the same work as a WINNER, was
        DROPPED as NOT_FASTER). Such a trial is measured once more."""
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
            return self.ledger.get_json("baseline", {}).get("stats", {}).get("median_s")
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
        settings = replace(self.settings, max_pairs=None) if job.phase == "baseline" else self.band_for(slot, job.reference)  # an A/A decides nothing
        ends_at = self.ends_at(job.phase)
        if ends_at is not None:
            settings = replace(settings, deadline_at=ends_at)
        started = time.perf_counter()

        def run() -> CandidateResult:
            return trial(job.levers, levers, reference.process, reference.evidence, references, self.frozen.tolerances, settings, folder, self.workspace,
                         target_with(self.frozen.target, levers, job.point), new=new, device=slot.device, backend=slot.backend, solo_s=self.solo_s(job),
                         spare=slot.spare, idle_noted=job.phase == "sweep")

        result = run()
        wrecked = self.wrecked(job, result)
        if wrecked is not None and job.phase in SEARCH and self.room_for_a_trial():
            self.ledger.add_note(f"{job.phase} {' + '.join(job.levers)}: {wrecked}; its verdict ({result.verdict}) not kept, measured again")
            shutil.rmtree(folder, ignore_errors=True)
            result = run()
        device_s = time.perf_counter() - started
        shutil.rmtree(folder, ignore_errors=True)
        if result.verdict == "TIMEOUT" and CUT in result.reason:  # not a verdict on the candidate: unrecorded, so a resume runs it again
            self.ledger.add_spent(device_s, "trials")
            self.ledger.add_note(f"{job.phase} {' + '.join(job.levers) or 'A/A'} was {CUT} after {device_s:.0f} device-s ({' '.join(result.reason.split())}): "
                                 "not recorded; starting the campaign again runs it" + tuner_cut(job.levers, device_s, self.session.name))
            left_s = self.request.deadline_s - (time.monotonic() - self.started) if self.request.deadline_s is not None else 0.0
            if job.phase in SEARCH and left_s > 0:
                raise Stopped(f"the search's last trial was cut {left_s:.0f} s before the wall-clock deadline, which {AFTER_SEARCH} needs", hard=False)
            raise self.deadline_reached()
        record = self.ledger.record(Record(seq=0, key=job.key, phase=job.phase, reference=job.reference, point=job.point, proposer=job.proposer, note=job.note,
                                           decision=decide(result), fallback=job.fallback, result=result, device=slot.label, device_s=device_s, finished_at=_now()))
        self.report_progress()
        return record

    def report_progress(self, final: bool = False) -> None:
        """Candidates tried out of those planned so far (the levers phase's, at most max_candidates; a follow-up, a
        combination or a proposal adds one as it runs), and once the campaign ends, the count it ended with."""
        if self.progress is None or not (final or self.planned):  # the baseline's A/A comes before any plan: no 0/0
            return
        done = len(self.candidates())
        self.progress(done, done if final else max(done, min(self.planned, self.request.max_candidates)))


def _gap(result: CandidateResult) -> str:
    return f"{result.speedup:.3g}x" if result.speedup is not None else result.verdict


def weight_bytes(evidence: dict) -> int | None:
    """The model's parameter bytes as the baseline's worker reported them (proof of work's step), or None: a token's
    roof reads them once at least (the KV cache read is on top, so a roof from them alone is a lower bound)."""
    work = evidence.get("work")
    return getattr(work, "parameter_bytes", None) or evidence.get("parameter_bytes") or None


def built_trial_s(records: list[Record]) -> float | None:
    """The mean device seconds of the trials whose worker was built for them (worker_turn 1), the baseline's own left
    out; of every trial when none was; None before the first. On the H200 a conv net's served candidates took 2-3 s and
    a revalidation, which builds its worker, 18 s: the mean of all trials (8 s) left the revalidation no room."""
    trials = [r for r in records if r.device_s > 0 and r.phase != "baseline"]
    built = [r.device_s for r in trials if r.result.worker_turn == 1] or [r.device_s for r in trials]
    return sum(built) / len(built) if built else None


def engaged_without_gain(record: Record) -> bool:
    """A lever measured alone against the baseline that engaged (each of its engagement checks held) without being
    faster. What it enables may still pay (a static cache on a CPU: no faster alone, decode_loop's way in), and on a
    host-bound step (an eager decode launches each kernel from Python) a device-side gain hides behind the host: on the
    H100 fuse_projections engaged at 1.02x on a 1.2B decoder's eager generate; on the H200 it took that decoder's
    decode_loop token 1.46 -> 1.28 ms. Catalog levers only: a knob or an overrides module is "engaged" by being taken,
    which says nothing of what it did. The verdict is not read: a REJECTED enabler's follow-ups run too, each gated on
    its own fresh inputs (on the H100 the static cache alone parted beyond the margin on one prompt, and static_cache +
    decode_loop passed the same gate on others: kept, 8.77x); a wrong lever's follow-ups are refused the same way."""
    result = record.result
    return (len(result.levers) == 1 and result.levers[0] in BY_NAME and not record.reference and bool(result.engagement)
            and all(e.engaged for e in result.engagement))


def fastest_first(winners: list[Record]) -> list[Record]:
    """Winners by their own step, the median of their timed legs on the controller's clock, shortest first (by speedup
    where a winner has no legs): each was timed beside the same baseline, whose pace moved from trial to trial on the
    H200, so a ratio ranks a winner partly by its reference's pace. There a conv net's compile read 2.81x with the
    baseline's legs at 11.2-12.1 ms (its solo pace 7.7 ms) and its own at 3.8-4.9 ms; reduce-overhead read 2.28x at
    3.4-4.8 ms beside a baseline at 7.6-10.9 ms. Kept by ratio, compile revalidated at 1.82x; by hand the other ran 2.28x."""
    if winners and all(w.result.candidate_legs_s for w in winners):
        return sorted(winners, key=lambda w: statistics.median(w.result.candidate_legs_s))
    return sorted(winners, key=lambda w: -(w.result.speedup or 0))


def rival_order(winners: list[Record], stack: list[str]) -> list[Record]:
    """The winners in the order the rival check tries them: those that share no lever with the stack first, then the
    rest, each group fastest first. A stack whose gain did not hold points first at its own levers: on the H200 the
    conv net's stack and its two fastest rivals were all reduce-overhead compiles, and the one rival the deadline
    left room for would have been one of them, not compile alone. Fastest: fastest_first's order."""
    kept = set(stack)
    return sorted(fastest_first(winners), key=lambda w: bool(kept & set(w.result.levers)))  # stable: fastest first in each group


def catalog_order(vendor: str) -> list[str]:
    """The catalog's levers for `vendor`, cheapest first, the searching ones last (TUNERS: each tunes per shape; on the
    H200 Inductor's autotuning of a conv net's Triton convolutions ran past 150 s and took 150 of a 264 device-s
    campaign, where plain compile took 14 s; TunableOp on a 1.2B decoder was still tuning, a fresh worker's build
    done, when its campaign's deadline cut it at 40 s, before compile or graph had run)."""
    levers = sorted((item for item in CATALOG if vendor in item.vendors), key=lambda item: (item.name in TUNERS, COST[item.kind], item.name))
    return [item.name for item in levers]


def sweep_reserve(reserve_s: float, deadline_left_s: float | None, budget_left_s: float) -> str | None:
    """Why the search ends now so that the sweep still fits (a soft stop: the sweep runs), or None: the deadline's
    or the budget's remaining seconds no longer cover the sweep's expected time."""
    if reserve_s <= 0:
        return None
    if deadline_left_s is not None and deadline_left_s <= reserve_s:
        return f"the search ended {deadline_left_s:.0f} s before the wall-clock deadline, which {AFTER_SEARCH} needs: {reserve_s:.0f} s expected"
    if budget_left_s <= reserve_s:
        return f"the search ended with {budget_left_s:.0f} device-s of the budget left, which {AFTER_SEARCH} needs: {reserve_s:.0f} s expected"
    return None


def _point(raw: object, declared: dict[str, list[str] | None]) -> dict[str, str] | None:
    if not isinstance(raw, dict) or not raw or any(str(k) not in declared for k in raw):
        return None
    return {str(k): str(v) for k, v in raw.items()}


def tuner_cut(levers: list[str], ran_s: float, session: str) -> str:
    """What a tuning lever cut at the deadline would take, said beside the cut: its warm-up compiles and benchmarks every
    kernel choice (a ResNet-50's or a BERT's max-autotune takes minutes), which no deadline that fits a device command
    left it; Inductor keeps what it tuned in its cache on this machine (TORCHINDUCTOR_CACHE_DIR, else
    /tmp/torchinductor_USER), so a later try starts further on."""
    tuners = [lever for lever in levers if lever in TUNERS]
    if not tuners:
        return ""
    return (f"; {tuners[0]} tunes each kernel in its warm-up and needs more than the {ran_s:.0f} s it had: give it its time once with "
            f"`hyperloom workload bench --name {session} --candidate {tuners[0]} --timeout-s 1800`, or start the campaign again with a later "
            "deadline (Inductor's cache on this machine keeps what it tuned)")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()
