"""The campaign over one frozen workload, phase by phase; every measurement is a workload A/B (tools/workload/ab.py):
gated on the frozen outputs, checked for engagement, interleaved beside a live reference, judged with a sign test.

- baseline: the baseline's step timed alone until its median is tight (the workload was frozen before), then a
  second worker doing the same work timed against it (A/A): its gap widens the noise band of the trials against
  the baseline; a trial against a stack is judged by the band of that stack's own A/A, measured once a stack;
- levers: first the levers that won together on this kind of model before (prior.py: one candidate), then every
  applicable lever alone against the baseline (cheapest first; independent, so spread over the slots); FASTER ones
  are WINNERs;
- combine: the fastest winner is kept; each other winner is tried on top of the stack, A/B-timed against the stack
  itself (not against the baseline), and KEEP or REVERT; a stack kept from a prior is then ablated (each of its levers
  taken off once, kept off where that is not slower);
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

import os
import shutil
import time

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shorten import at_clause
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.applies import STACK_MAY_BRING, brought, present, unmet
from hyperloom.tools.optimize.keys import conflict, point_of, stacked
from hyperloom.tools.optimize.measurement import Job, Measurement, now
from hyperloom.tools.optimize.models import TIMED, Decision, OptimizeRequest, Phase, Record
from hyperloom.tools.optimize.order import catalog_order, engaged_without_gain, fastest_first, rival_order
from hyperloom.tools.optimize.prior import acting, kind_of, prior_for
from hyperloom.tools.optimize.prior import record as record_prior
from hyperloom.tools.optimize.proposals import NOTE_PREFIX, ProfileProposals, profile_proposals, weight_bytes
from hyperloom.tools.optimize.session import Session
from hyperloom.tools.optimize.slots import Slot, Slots, device_slots
from hyperloom.tools.optimize.stops import Control, Stopped, StopRules
from hyperloom.tools.pipeline.stats import summarize
from hyperloom.tools.workload.ab import ABSettings, baseline_legs, calibrated, paced
from hyperloom.tools.workload.pacing import leg_policy
from hyperloom.tools.workload.freeze import refusal
from hyperloom.tools.workload.gate import twin
from hyperloom.tools.workload.levers import BY_NAME, EXCLUSIVE_KINDS, GPU, Lever, check_candidate
from hyperloom.tools.workload.models import CandidateResult
from hyperloom.tools.workload.process import WorkloadFailure

POLL_S = 0.2
BASELINE_CI = 0.02
BASELINE_MAX_LEGS = 30
# the solo legs' time past the first six: a figure no verdict reads (the pairs judge; docs/decisions.md: The baseline's solo legs)
BASELINE_MAX_S = 30.0
SAME_WORK = "A/A: a second worker doing the baseline's own work against the first; its gap is process noise and widens the noise band"
LOOKS = 3  # rounds of `pairs` an undecided candidate may get (ab.ABSettings.max_pairs), each look judged at ALPHA / 3
UNSTEADY = 1.5  # a kept gain this many times its revalidation is noted as unsteady
RIVALS = 2  # at most this many winners revalidated alone against a stack whose revalidation fell below them
NOT_RUN = "its need was not in the baseline: not run alone"


def trusted_inputs(result: CandidateResult, fixed_inputs: bool) -> bool:
    """Whether `result` was measured on inputs a memo could not have faked: fresh ones, or fixed ones with the caller's
    consent (`fixed_inputs`)."""
    return result.inputs_fresh is not False or fixed_inputs


class Campaign:
    """The phases of one campaign over a frozen workload (the module's docstring), each measurement made by
    `measurement` (measurement.py) and each stop rule read from `stops` (stops.py); what is recorded is the ledger's."""

    def __init__(self, session: Session, request: OptimizeRequest, workspace: Workspace, control: Control,
                 progress: ProgressFn | None = None) -> None:
        self.session, self.request, self.workspace, self.control, self.progress = session, request, workspace, control, progress
        self.ledger, self.frozen = session.ledger, session.frozen
        # an undecided candidate gets up to twice its pairs again (ab.paired; docs/decisions.md: The baseline's solo legs and the pairs)
        settings = ABSettings(request.pairs, request.steps_per_leg, OptimizeRequest.warmup_steps, OptimizeRequest.noise_band,
                              request.timeout_s, max_pairs=LOOKS * request.pairs)
        self.stops = StopRules(request, self.ledger, control, self.frozen.declared_knobs, workspace)
        self.measurement = Measurement(session, workspace, self.stops, settings, self.report_progress)  # its settings: self.settings
        self.planned = 0  # candidates the campaign plans to try, for its progress (report_progress)
        # levers omitted on a resume: those the campaign was started with (else every applicable one)
        self.chosen = request.levers if request.levers is not None else self.ledger.get_json("request", {}).get("levers")

    # state -------------------------------------------------------------------------------------
    @property
    def settings(self) -> ABSettings:
        """The A/B settings every trial starts from: paced and calibrated by the baseline phase."""
        return self.measurement.settings

    @settings.setter
    def settings(self, settings: ABSettings) -> None:
        self.measurement.settings = settings

    def set_phase(self, phase: Phase) -> None:
        self.ledger.set("phase", phase)

    def settle(self, slot: Slot) -> None:
        """After a search that ended early (count, patience, the time the rest needs) with winners but nothing kept yet:
        the fastest winner kept and revalidated, as combine's first step would, so that a campaign cut in its levers
        phase still reports what it found."""
        winners = fastest_first(self.ledger.winners())
        if self.ledger.stack():
            self.revalidate_pending(slot)
            return
        if not winners:
            return
        self.set_phase("combine")
        self.keep_first(winners[0])
        self.revalidate(slot, [])
        self.rivals(slot)

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
                    self.record_prior(slots.first)
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
        self.stops.check()
        base = slot.reference([])
        if self.ledger.get("baseline") is None:
            started = time.perf_counter()
            solo = baseline_legs(base.process, self.settings.steps_per_leg, BASELINE_CI, BASELINE_MAX_LEGS, max_s=BASELINE_MAX_S)
            self.ledger.add_spent(time.perf_counter() - started, "solo legs")
            info = base.info
            evidence = measured("optimize", device=info["device"] or host_device(), target=info["vendor"], toolchain=info["toolchain"],
                                inputs_sha256=combine_digests([self.frozen.manifest_sha256,
                                                               sha256_json(self.request.model_dump(mode="json"))]))
            self.ledger.set_json("baseline", {"stats": summarize(solo.legs_s).model_dump(), "device_step_s": solo.device_step_s,
                                              "inputs_step_s": solo.inputs_step_s, "wall_step_s": solo.wall_step_s, "figure": solo.figure,
                                              "points": info["points"],
                                              "knob_defaults": info["knob_defaults"], "evidence": evidence.model_dump(mode="json")})
        recorded = self.ledger.baseline()
        step_s = recorded["stats"]["median_s"]
        self.settings = paced(self.settings, step_s, recorded.get("inputs_step_s"), recorded.get("figure") == "device")  # on a resume too
        if self.settings.steps_per_leg != self.request.steps_per_leg and not self.ledger.get("paced_noted"):
            inputs = f" and {recorded['inputs_step_s'] * 1e3:.4g} ms of inputs(seed)" if recorded.get("inputs_step_s") else ""
            self.ledger.add_note(f"{self.settings.steps_per_leg} step(s) a timed leg, not {self.request.steps_per_leg}: the baseline's "
                                 f"step of {step_s * 1e3:.4g} ms{inputs} ({leg_policy()})")
            self.ledger.set("paced_noted", "yes")
        if not base.process.info["has_inputs"] and not self.request.fixed_inputs and not self.ledger.get("fixed_inputs_noted"):
            self.ledger.add_note("the workload has no inputs(seed): its inputs are fixed, so memoization is not excluded and no gain is "
                                 "kept; give the workload inputs(seed), or pass fixed_inputs true to keep gains measured on fixed inputs")
            self.ledger.set("fixed_inputs_noted", "yes")
        same = self.measurement.same_work(slot, [], SAME_WORK, step_s)
        self.settings = calibrated(self.settings, same.result)  # every later trial's noise band (ab.calibrated), on a resume too

    def applicable(self) -> list[str]:
        """The levers tried alone: those asked for, else every catalog lever for this vendor and each other value of a Literal knob."""
        if self.chosen is not None:
            return list(dict.fromkeys(self.chosen))
        defaults = self.ledger.baseline().get("knob_defaults", {})
        knobs = [f"knob:{name}={value}" for name, values in self.frozen.declared_knobs.items() if values
                 for value in values if value != str(self.frozen.target.knobs.get(name, defaults.get(name)))]
        return knobs + catalog_order(self.frozen.vendor)

    def levers(self, slots: Slots) -> None:
        self.set_phase("levers")
        base = slots.first.reference([])
        first = self.prior_job(base.info["model_facts"], base.evidence)
        jobs = [first] if first is not None else []
        for name in self.applicable():
            try:
                [item] = check_candidate([name], self.frozen.vendor, self.frozen.declared_knobs)
            except HyperloomError as exc:
                self.ledger.add_note(f"lever {name} not tried: {exc.cause}")
                continue
            key = self.measurement.key("candidate", [], [name])
            if self.ledger.find(key) is not None:
                continue
            if item.lossy and self.chosen is None and not self.frozen.looser_twin_rule():
                self.ledger.add_note(f"lever {name} not tried: it changes numerics beyond the model's own ({item.lossy}); freeze with k "
                                     f"above {twin.DEFAULT_K:g} (the error against the float32 twin you accept, as a multiple of the "
                                     "model's own) to try it, or list it in levers")
                continue
            lacking = unmet(item, base.info["model_facts"], base.evidence)  # listed levers too: one that cannot act would come back NO_OP
            if lacking is None:
                jobs.append(Job(key, "levers", [name], [], [name], "catalog"))
            elif lacking.deferred:
                self.not_run(key, name, lacking.reason)
            elif not self.ledger.get(f"unmet:{name}"):
                self.ledger.add_note(f"lever {name} not tried: {lacking.reason}")
                self.ledger.set(f"unmet:{name}", "noted")
        self.planned = len(self.ledger.candidates()) + len(jobs)
        slots.run_many(jobs, self.lever_trial, self.stops.check_search)

    def prior_job(self, facts: dict, evidence: dict) -> Job | None:
        """The stack that won together on this kind of model before (prior.py), as the levers phase's first candidate:
        its levers that can act here, in its order; None where no prior matches, fewer than two of its levers can act,
        or it was measured already (a resume)."""
        found = prior_for(kind_of(facts, evidence), self.frozen.vendor, self.workspace)
        if found is None:
            return None
        lossy = self.chosen is not None or self.frozen.looser_twin_rule()  # listed, or a looser tolerance declared
        levers, left = acting(found, set(self.applicable()), facts, evidence, lossy)
        said = f"the prior {' + '.join(found.levers)} ({found.evidence})"
        if len(levers) < 2:
            if not self.ledger.get("prior_noted"):
                self.ledger.add_note(f"{said} not tried first: fewer than two of its levers can act here; left out {', '.join(left)}")
                self.ledger.set("prior_noted", "yes")
            return None
        try:
            check_candidate(levers, self.frozen.vendor, self.frozen.declared_knobs)
        except HyperloomError as exc:
            self.ledger.add_note(f"{said} not tried first: {exc.cause}")
            return None
        key = self.measurement.key("candidate", [], levers)
        if self.ledger.find(key) is not None:
            return None
        note = f"tried first: {said}" + (f"; left out {', '.join(left)}" if left else "")
        return Job(key, "levers", levers, [], levers, "prior", note)

    def record_prior(self, slot: Slot) -> None:
        """A revalidated stack of two levers or more, recorded for the next campaign on a model of this kind (prior.py)."""
        stack, gain = self.ledger.stack(), self.ledger.gain()
        if len(stack) < 2 or gain is None or gain <= 1 + self.settings.noise_band or not all(name in BY_NAME for name in stack):
            return
        base = slot.reference([])
        record_prior(self.workspace, kind_of(base.info["model_facts"], base.evidence), self.frozen.vendor,
                     base.info["device"] or host_device(), stack, gain, self.session.name, now())

    def lever_trial(self, slot: Slot, job: Job) -> list[Job]:
        """One lever (or a winner with a follow-up) against the baseline, then its follow-ups when it is a WINNER or
        engaged alone without a gain (an enabler: a static cache no faster alone on a CPU): each lever waiting for what
        it brings (applies.py: a static cache for decode_loop, graph launches for decode_attention, compiled code for a
        stance or a quantization) tried with it at once, so that a campaign cut by its deadline has already measured the
        pair. Each waiting lever follows one lever only, the first (the cheapest that brings its need): four compiles
        each followed by three waiting levers, and by their pairs, made 22 candidates of a CPU decoder's campaign; the
        stack's retry (retry_on_stack) tries it again on what is kept. One of a kind a candidate holds once (a second
        quantization) is not a follow-up of a winner that has one."""
        record = self.measurement.measure(slot, job, lambda r: "WINNER" if self.keepable(r) else "DROPPED")
        if record.decision != "WINNER" and not engaged_without_gain(record):
            return []
        brings = brought(job.levers)
        follow = []
        tried = self.ledger.followed()
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
            key = self.measurement.key("candidate", [], names)
            if self.ledger.find(key) is None:
                follow.append(Job(key, "levers", names, [], names, "catalog",
                                  f"{waiting.name} waited for what {' + '.join(job.levers)} brings"))
        return follow

    def waiting(self) -> list[Lever]:
        """The levers recorded NO_OP without a run (not_run): their need a stack may bring."""
        return [BY_NAME[r.result.levers[0]] for r in self.ledger.records() if r.phase == "levers" and r.note == NOT_RUN]

    def not_run(self, key: str, name: str, reason: str) -> None:
        """A lever whose need only a stack can bring, recorded NO_OP without a worker (no device time), so that
        retry_on_stack tries it on the stack."""
        result = CandidateResult(levers=[name], verdict="NO_OP", reason=f"not run alone: {reason}; tried on the stack once one is kept")
        self.ledger.record(Record(seq=0, key=key, phase="levers", reference=[], proposer="catalog", note=NOT_RUN, decision="DROPPED",
                                  result=result, device="none", device_s=0.0, finished_at=now()))

    def combine(self, slot: Slot) -> None:
        self.set_phase("combine")
        self.revalidate_pending(slot)
        for winner in fastest_first(self.ledger.winners()):
            stack = self.ledger.stack()
            if set(winner.result.levers) <= set(stack):
                continue
            if not stack:
                self.keep_first(winner)
            else:
                self.stops.check_search()
                if not self.try_on_stack(slot, stack, winner.result.levers, "combination", f"winner #{winner.seq} on the stack"):
                    continue
            self.revalidate(slot, stack)
        self.rivals(slot)
        self.ablate(slot)
        self.retry_on_stack(slot)

    def ablate(self, slot: Slot) -> None:
        """A stack kept from a prior (its levers measured together, never one at a time; prior.py): each of its levers
        taken off once, the latest first, the stack less it timed against the stack. Where that is not slower (FASTER,
        or NOT_FASTER at 1x or above on fresh inputs) the lever did nothing measurable on this model and the smaller
        stack is kept and revalidated. A lever that brings what another on the stack needs (decode_loop's graphs for
        the kernels, the static cache for the loop) stays."""
        won = next((r for r in self.ledger.records() if r.proposer == "prior" and r.decision == "WINNER"), None)
        if won is None:
            return
        for name in reversed(won.result.levers):
            stack = self.ledger.stack()
            rest = [n for n in stack if n != name]
            if name not in stack or not rest or any(BY_NAME[n].needs in BY_NAME[name].brings - brought([r for r in rest if r != n])
                                                    for n in rest if n in BY_NAME and name in BY_NAME):
                continue
            try:
                check_candidate(rest, self.frozen.vendor, self.frozen.declared_knobs)
            except HyperloomError:
                continue
            self.stops.check_search()
            key = self.measurement.key("candidate", stack, rest)

            def decide(result: CandidateResult) -> Decision:
                trusted = trusted_inputs(result, self.request.fixed_inputs)
                unchanged = result.verdict == "NOT_FASTER" and (result.speedup or 0) >= 1 and trusted
                return "KEEP" if self.keepable(result) or unchanged else "REVERT"
            record = self.ledger.find(key) or self.measurement.measure(
                slot, Job(key, "combine", rest, stack, [], "campaign", f"ablation: the prior's stack less {name}"), decide)
            if record.decision == "KEEP":
                self.revalidate(slot, stack)

    def rivals(self, slot: Slot) -> None:
        """The winners that measured alone above the stack's revalidated gain (beyond the noise band), each revalidated
        alone against the baseline, at most RIVALS of them, fastest first; one that revalidates above the stack replaces
        it: a kept figure that did not hold may leave a runner-up that does (docs/decisions.md: Rivals, a pending
        revalidation, an unsteady stack, the sweep's room). The order is rival_order's. Each
        needs the time of one more trial before the deadline; without it the rival is noted, not tried."""
        tried = 0
        for winner in rival_order(self.ledger.winners(), self.ledger.stack()):
            stack, gain = self.ledger.stack(), self.ledger.gain()
            if not stack or gain is None or set(winner.result.levers) <= set(stack):
                continue
            if (winner.result.speedup or 0) <= gain * (1 + self.settings.noise_band):
                continue  # it cannot beat the stack (a rival kept meanwhile raised the bar)
            if tried == RIVALS:
                return
            levers = winner.result.levers
            if not self.stops.room_for_a_trial():
                self.ledger.add_note(f"{' + '.join(levers)} ({winner.result.speedup:.3g}x alone) was not revalidated against the stack's "
                                     f"{gain:.3g}x: no time left before the deadline for one more trial")
                return
            self.stops.check()
            key = self.measurement.key("revalidate", [], levers)
            note = f"winner #{winner.seq} ({winner.result.speedup:.3g}x alone) against {' + '.join(stack)}'s revalidated {gain:.3g}x"
            job = Job(key, "revalidate", levers, [], levers, "campaign", note, fallback=stack)
            record = self.ledger.find(key) or self.measurement.measure(slot, job, lambda r: "MEASURED" if r.verdict in TIMED
                                                                                            and (r.speedup or 0) >= 1 else "REGRESSION")
            tried += 1
            keep = self.measurement.key("keep", [], levers)
            if record.decision == "MEASURED" and (record.result.speedup or 0) > gain and self.ledger.find(keep) is None:
                self.ledger.record(Record(seq=0, key=keep, phase="combine", reference=[], proposer="campaign",
                                          note=f"revalidated at {record.result.speedup:.3g}x, above {' + '.join(stack)}'s "
                                               f"{gain:.3g}x: replaces it",
                                          decision="KEEP", result=record.result, device=record.device, device_s=0.0, finished_at=now()))

    def retry_on_stack(self, slot: Slot) -> None:
        """Once on the stack, each lever that took no effect on the baseline (what it acts on, compiled graphs, CUDA
        graphs, float32 matmuls, may be there now) and each that engaged there without being faster when the stack
        replays graphs and the baseline did not (engaged_without_gain). Novelty keeps each (stack, lever) to one measurement."""
        base_graphs = "graph_launch" in present(slot.reference([]).evidence)
        for record in [r for r in self.ledger.records() if r.phase == "levers" and r.result.verdict in ("NO_OP", "NOT_FASTER")]:
            stack = self.ledger.stack()
            if not stack or set(record.result.levers) <= set(stack):
                continue
            if record.result.verdict == "NOT_FASTER":
                if base_graphs or not engaged_without_gain(record) or not self.replays_graphs(slot, stack):
                    continue
                why = (f"#{record.seq} engaged on the baseline but was not faster there (the host bounds an eager step); on a stack that "
                       "replays graphs it may be")
            else:
                lever = BY_NAME.get(record.result.levers[0])  # None: a knob or an overrides module, which needs nothing
                need = lever.needs if lever is not None else None
                if record.note == NOT_RUN and need not in brought(stack) and (need not in STACK_MAY_BRING
                                                                              or need not in present(slot.reference(stack).evidence)):
                    continue  # what it waits for is not on the stack either (by the catalog, nor in the stack's profiled step)
                why = f"#{record.seq} took no effect on the baseline; on the stack it may"
            if frozenset(stacked(stack, record.result.levers)) in self.ledger.followed():
                continue  # measured as a winner's follow-up already: the same candidate
            self.stops.check_search()
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
            self.stops.check_search()
            queued = self.ledger.queued()
            if not queued:
                if time.monotonic() - waiting_since >= self.request.proposal_wait_s:
                    return
                time.sleep(POLL_S)
                continue
            proposal_id, levers, note = queued[0]
            stack = self.ledger.stack()
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
        self.stops.check_search()
        started = time.perf_counter()
        try:
            found = profile_proposals(self.frozen, self.session.name, self.workspace, self.request.timeout_s, self.ledger.stack(),
                                      bytes_per_replay)
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
        return result.verdict == "FASTER" and trusted_inputs(result, self.request.fixed_inputs)

    def keep_first(self, winner: Record) -> None:
        """The fastest single lever starts the stack: its own measurement against the baseline is the evidence."""
        key = self.measurement.key("keep", [], winner.result.levers)
        if self.ledger.find(key) is None:
            self.ledger.record(Record(seq=0, key=key, phase="combine", reference=[], proposer="campaign",
                                      note=f"the fastest single lever (#{winner.seq})",
                                      decision="KEEP", result=winner.result, device=winner.device, device_s=0.0, finished_at=now()))

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
        key = self.measurement.key("candidate", stack, candidate)
        record = self.ledger.find(key) or self.measurement.measure(slot, Job(key, phase, candidate, stack, new, proposer, note),
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
        revalidated before anything is stacked on it, reverted to what it was kept on if it fails; else a resumed
        campaign may close with its stack "not revalidated yet" (docs/decisions.md: Rivals, a pending revalidation)."""
        stack = self.ledger.stack()
        if not stack or self.ledger.gain() is not None:
            return
        kept = self.ledger.kept(stack)
        self.revalidate(slot, kept.reference if kept is not None else [])

    def _revalidate(self, slot: Slot, previous: list[str]) -> None:
        self.stops.check()
        stack = self.ledger.stack()
        key = self.measurement.key("revalidate", [], stack)
        if self.ledger.find(key) is None:
            def decide(result: CandidateResult) -> Decision:
                return "MEASURED" if result.verdict in TIMED and (result.speedup or 0) >= 1 else "REGRESSION"
            job = Job(key, "revalidate", stack, [], stack, "campaign", "the whole stack against the baseline", fallback=previous)
            record = self.measurement.measure(slot, job, decide)
            if record.decision == "REGRESSION":
                self.ledger.add_note(f"the stack {' + '.join(stack)} failed its revalidation ({record.result.verdict}: "
                                     f"{at_clause(record.result.reason, 200, 'breakdown.json')}); "
                                     f"reverted to {' + '.join(previous) or 'the baseline'}")
            else:
                self.note_unsteady(stack, record.result.speedup)

    def note_unsteady(self, stack: list[str], revalidated: float | None) -> None:
        """A note when the whole stack re-timed against the baseline reads far below the gain it was kept on: that gain
        does not hold from one worker to the next, and the report says so beside the figure (docs/decisions.md: Rivals,
        a pending revalidation, an unsteady stack)."""
        kept = self.ledger.kept(stack)
        if kept is None or kept.reference or not kept.result.speedup or not revalidated:
            return
        if kept.result.speedup > UNSTEADY * revalidated:
            self.ledger.add_note(f"the stack {' + '.join(stack)} was kept at {kept.result.speedup:.3g}x against the baseline and "
                                 "revalidated at "
                                 f"{revalidated:.3g}x: its gain does not hold from one pair of workers to the next (a graph re-recorded, a "
                                 "compile that differs per process?); run the campaign again or profile the stack before trusting "
                                 "either figure")

    def sweep(self, slot: Slot) -> None:
        """The stack at each declared point against the baseline at it, while a trial fits before the deadline (a point
        builds its references first; docs/decisions.md: Rivals, a pending revalidation, an unsteady stack, the sweep's room)."""
        self.set_phase("sweep")
        stack = self.ledger.stack()
        points = self.ledger.baseline().get("points", [])
        if not stack or not points:
            return
        for raw in points:
            point = point_of(raw, self.frozen.declared_knobs)
            if point is None:
                self.ledger.add_note(f"sweep point {str(raw)[:80]} skipped: a point is a dict of the workload's knobs and their values")
                continue
            self.stops.check()
            key = self.measurement.key("sweep", [], stack, point)
            if self.ledger.find(key) is not None:
                continue
            if not self.stops.room_for_a_trial():
                self.ledger.add_note(f"sweep of {' + '.join(stack)} at {', '.join(f'{k}={v}' for k, v in point.items())} not started: no "
                                     "time left before the deadline for one more trial (its references at the point are built first); "
                                     "start the campaign again to sweep it")
                return
            self.measurement.measure(slot, Job(key, "sweep", stack, [], stack, "campaign", "the final stack at a declared point", point),
                                     lambda r: "MEASURED" if r.verdict in TIMED and (r.speedup or 0) >= 1 - self.settings.noise_band
                                               else "REGRESSION")

    # progress -----------------------------------------------------------------------------------
    def report_progress(self, final: bool = False) -> None:
        """Candidates tried out of those planned so far (the levers phase's, at most max_candidates; a follow-up, a
        combination or a proposal adds one as it runs), and once the campaign ends, the count it ended with."""
        if self.progress is None or not (final or self.planned):  # the baseline's A/A comes before any plan: no 0/0
            return
        done = len(self.ledger.candidates())
        self.progress(done, done if final else max(done, min(self.planned, self.request.max_candidates)))


