"""One candidate judged beside a live reference process: built with its levers, gated on reference outputs,
checked for engagement, then A/B-timed in interleaved pairs and judged with a sign test. Each leg is the
controller's (timed.py: fresh seeds, its own clock, the other worker stopped); in each pair the candidate's last
outputs are gated against the reference's on the same seeds, and its worker's account of its time against the
controller's clock. A candidate left undecided
(its median beyond the noise band, the test not yet) gets more pairs, up to `max_pairs`, each look at a share of
the error rate so that looking again does not make a gain out of noise.

workload_bench calls it with the pure baseline as the reference and the frozen outputs as references; optimize
also with a stack of kept levers as the reference (so a change is measured on top of what is kept) and, in its
sweep, with a baseline rebuilt at another point and its live outputs. The order of judgement is bench.py's.
"""

from __future__ import annotations

import math
import shutil
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.stopwatch import PartClock
from hyperloom.tools.pipeline.stats import sign_test_p
from hyperloom.tools.runtime.sampling import Z95, median_ci_halfwidth
from hyperloom.tools.workload.gate import continuation, generated
from hyperloom.tools.workload.checks.engagement import compile_note, engagement
from hyperloom.tools.workload.gate.frozen import compare
from hyperloom.tools.workload.levers import Lever, unreviewed
from hyperloom.tools.workload.models import CandidateResult, Engagement, OutputCheck, OutputTolerance, StepWork
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess
from hyperloom.tools.workload.checks.proof import inputs_rewritten, profiled_work, short_of_work
from hyperloom.tools.workload.checks.roof import impossible
from hyperloom.tools.workload.spare import Spare, Where
from hyperloom.tools.workload.wire import WarmupAnswer, tampered_reason
from hyperloom.tools.workload.checks.clock_checks import disagreement, inputs_moved, paired_pace, slowed, two_paced
from hyperloom.tools.workload.gate.digest import bounds as digest_bounds, mismatch as digest_mismatch
from hyperloom.tools.workload.pacing import paced_steps
from hyperloom.tools.workload.timed import Leg, draw_seeds, gated_step, keeps_every_step, leg
from hyperloom.tools.workload.gate.twin import TEACHER, is_twin, teacher_of

ALPHA = 0.05
MIN_SOLO_LEGS = 6  # the fewest solo legs whose median's CI is read


@dataclass(frozen=True)
class ABSettings:
    """How a candidate is warmed and timed beside its reference."""

    pairs: int
    steps_per_leg: int
    warmup_steps: int
    noise_band: float
    timeout_s: float
    max_pairs: int | None = None  # more pairs for an undecided candidate, in rounds of `pairs`; None: `pairs` only
    deadline_at: float | None = None  # time.monotonic(): the trial's worker calls, the reference's too, are cut there

    def looks(self) -> int:
        """How many times a candidate's pairs may be judged: 1 + the extra rounds max_pairs allows."""
        return max(1, math.ceil((self.max_pairs or self.pairs) / self.pairs))

    def alpha(self) -> float:
        """The sign test's level at each look: ALPHA shared over the looks (Bonferroni)."""
        return ALPHA / self.looks()


def target_with(target: Target, levers: list[Lever], knobs: dict[str, str] | None = None) -> Target:
    """`target` with `knobs` (a sweep point) over its own, then the knob levers' values over those."""
    merged = {**target.knobs, **(knobs or {})}
    for lever in levers:
        if lever.kind == "knob":
            key, value = lever.value.split("=", 1)
            merged[key] = value
    return replace(target, knobs=merged)


def saved_outputs(process: WorkloadProcess, folder: Path, references: dict[str, np.ndarray] | None = None) -> Path:
    """The process's outputs saved in `folder`, with the teacher-forced logits `references` hold for its tokens (twin.py)."""
    process.outputs(folder, teacher_of(references or {}))
    return folder


def load_outputs(folder: Path, names: list[str]) -> dict[str, np.ndarray]:
    """Outputs a process saved (saved_outputs), read back as references; teacher-forced logits only where saved, twins
    never (a live worker has none)."""
    return {name: np.load(folder / f"{name}.npy", allow_pickle=False) for name in names
            if not is_twin(name) and (not name.endswith(TEACHER) or (folder / f"{name}.npy").is_file())}


@dataclass(frozen=True)
class Solo:
    """The reference's legs alone: each leg's figure (seconds a step), and the medians a report says beside them."""

    legs_s: list[float]
    steps_per_leg: int  # as paced after the first leg
    device_step_s: float | None  # the median window in device time (GPU)
    inputs_step_s: float | None  # the median inputs(seed) a step, outside the window (None: fixed inputs)
    wall_step_s: float  # the median window on the worker's clock
    figure: str  # what the legs' figures are: "device", "wall", or why the wall stood for the device time


def baseline_legs(base: WorkloadProcess, steps_per_leg: int, target_ci: float, max_legs: int,
                  references: dict[str, np.ndarray] | None = None, folder: Path | None = None, max_s: float | None = None) -> Solo:
    """Legs of the reference alone (timed windows, fresh seeds when the workload takes them) until its median's CI is
    within target_ci, or max_legs, or (after MIN_SOLO_LEGS) `max_s` seconds spent; the legs after the first paced by it
    (paced_steps). With `references` and `folder`, one drawn step's outputs of each leg are saved there and their shapes
    checked against the references' (inputs(seed) must keep them)."""
    legs: list[Leg] = []
    seeded = fresh_inputs(base)
    started = perf_counter()
    steps = steps_per_leg
    while len(legs) < max_legs and not (max_s is not None and len(legs) >= MIN_SOLO_LEGS and perf_counter() - started >= max_s):
        seeds = draw_seeds(steps) if seeded else None
        saved = folder / f"solo{len(legs)}" if references and folder is not None else None
        gated = gated_step(steps)
        timed = leg(base, steps, seeds, saved, gated=gated, keep_all=keeps_every_step(references or {}, steps))
        if saved is not None:
            same_shapes(load_outputs(saved, list(references or {})), references or {}, seeds[timed.saved_step or 0] if seeds else None)
            shutil.rmtree(saved, ignore_errors=True)
        legs.append(timed)
        if len(legs) == 1:
            steps = paced_steps(steps_per_leg, timed.step_s, timed.inputs_step_s, timed.figure == "device")
        if len(legs) >= MIN_SOLO_LEGS and median_ci_halfwidth([x.step_s for x in legs]) <= target_ci:
            break
    device = [s for x in legs for s in x.device_s]
    return Solo(legs_s=[x.step_s for x in legs], steps_per_leg=steps, device_step_s=statistics.median(device) if device else None,
                inputs_step_s=statistics.median(x.inputs_step_s for x in legs) if seeded else None,
                wall_step_s=statistics.median(x.wall_step_s for x in legs), figure=_figure(legs))


def _figure(legs: list[Leg]) -> str:
    """What a run of legs' figures are: the one source they share, else how many stood on the wall clock and why."""
    walled = [x.figure for x in legs if x.figure not in ("device", "wall")]
    kinds = {x.figure for x in legs}
    if not walled:
        return kinds.pop() if len(kinds) == 1 else "device and wall"
    return f"{len(walled)} of {len(legs)} legs on {walled[0]}"


def fresh_inputs(process: Any) -> bool:
    """Whether the workload makes its inputs from a seed (inputs(seed)), as the reference's worker reported at build."""
    return bool(process.info["has_inputs"])


def same_shapes(outputs: dict[str, np.ndarray], references: dict[str, np.ndarray], seed: int | None) -> None:
    """Refuse a workload whose outputs change shape with the seed: candidates could not be gated on them. Generated
    tokens and their top-k lists (generated.py) may hold another count of generated tokens: a `generate` stops at its
    end-of-sequence token wherever the new prompt leads it (docs/decisions.md: Generated outputs change length with the seed)."""
    tokens = generated.companions(references)
    steps_free = generated.grouped(tokens) | {name + TEACHER for name in tokens}
    moved = [f"{name} {list(outputs[name].shape)}, frozen {list(ref.shape)}" for name, ref in references.items()
             if name in outputs and _layout(outputs, name, steps_free) != _layout(references, name, steps_free)]
    if moved:
        raise HyperloomError(f"the workload's outputs changed shape with the inputs of seed {seed}: " + "; ".join(moved)[:400],
                             "make inputs(seed) draw new values of the same shapes (the seed picks values, not sizes)")


def _layout(arrays: dict[str, np.ndarray], name: str, steps_free: set[str]) -> tuple[int | None, ...]:
    """An output's shape as the seed must keep it: a generated group's steps axis left out, its prompt kept."""
    shape: tuple[int | None, ...] = arrays[name].shape
    if name not in steps_free or arrays[name].ndim < 2:
        return shape
    ids = arrays.get(name + generated.IDS)
    prompt = shape[1] - ids.shape[1] if ids is not None and ids.ndim >= 2 else None
    return (shape[0], prompt, *shape[2:])


@dataclass(frozen=True)
class Candidate:
    """What is tried: its levers by name and as prepared; `new`, those whose engagement is checked (None: every lever;
    the levers the reference already holds left their evidence there too); `idle_noted`, a lever that takes no effect
    said in the reason and the candidate still timed, not NO_OP (a sweep point: the kept stack at other knob values,
    where a lever may have nothing to act on, as decode_gemv at batch 8)."""

    names: list[str]
    levers: list[Lever]
    new: list[Lever] | None = None
    idle_noted: bool = False


@dataclass(frozen=True)
class Against:
    """What the candidate is judged against: the live reference worker; its evidence (the step's work and roof where
    proof.reference_evidence made it: then proof of work and the roof are checked too); the reference outputs and
    their tolerances; and the reference's step alone (`solo_s`, baseline_legs' median), against which its paired
    legs are checked."""

    process: WorkloadProcess
    evidence: dict[str, Any]
    references: dict[str, np.ndarray]
    tolerances: dict[str, OutputTolerance]
    solo_s: float | None = None


@dataclass(frozen=True)
class Plan:
    """How and where the candidate runs: the A/B settings, its folder, where its worker starts (spare.Where: the target
    built with its levers, the workspace, the timeout, the GPU it is pinned to through its backend's variable) and the
    kept worker that may serve it a copy of the workload instead of a build (spare.py; by default none: a fresh worker,
    closed after)."""

    settings: ABSettings
    folder: Path
    where: Where
    spare: Spare = field(default_factory=lambda: Spare(enabled=False))


def trial(candidate: Candidate, against: Against, plan: Plan) -> CandidateResult:
    """The candidate judged beside the reference: built and checked in its worker, then timed in interleaved pairs
    (in_its_worker), then its verdict read from the pairs (from_the_pairs). The result's gate_s: the seconds spent judging
    (GateClock), not timing."""
    clock, began = GateClock(), perf_counter()
    ran = in_its_worker(candidate, against, plan, clock)
    result = ran if isinstance(ran, CandidateResult) else from_the_pairs(candidate, against, plan.settings, ran)
    return result.model_copy(update={"gate_s": clock.spent_s, "gate_parts_s": clock.parts_s, "trial_s": perf_counter() - began,
                                     "worker_turn": plan.spare.turn})


class GateClock(PartClock):
    """The seconds the controller spent judging a candidate rather than timing it, by part (outputs, continuation,
    profile, pairs): its outputs saved and compared (the first check and each pair's), the continuation scored, the
    proof-of-work profile read. The tamper checks run inside the worker's calls (build and each timed leg) and are not
    separable from them."""

    judging = PartClock.timing


@dataclass(frozen=True)
class Ran:
    """What the candidate's worker left for its verdict: its warm-up, its outputs' checks, its levers' engagement and
    what is noted beside it, its step's work, the pairs, and why its inputs(seed) ran other code than the reference's."""

    warm: WarmupAnswer
    checks: list[OutputCheck]
    engaged: list[Engagement]
    note: str
    work: StepWork | None
    run: Paired
    rewritten: str | None


def in_its_worker(candidate: Candidate, against: Against, plan: Plan, clock: GateClock) -> CandidateResult | Ran:
    """The candidate in its worker, in the order bench.py gives: built (its overrides module checked for tampering),
    warmed up, its outputs gated (a parting at a near tie: its continuation scored), its levers' engagement and its
    step's work read off one profiled step, then the interleaved pairs. The first refusal is the result."""
    names, levers, base, settings, folder = candidate.names, candidate.levers, against.process, plan.settings, plan.folder
    references, tolerances, base_evidence = against.references, against.tolerances, against.evidence
    fresh = fresh_inputs(base)
    fixed = "" if fresh else INPUTS_FIXED
    try:
        base.deadline_at = settings.deadline_at
        with plan.spare.candidate(plan.where, levers, folder, settings.deadline_at) as process:
            if process.info["tampered"]:
                said = tampered_reason(process.info["tampered"], "when its overrides module was imported")
                return CandidateResult(levers=names, verdict="REJECTED", reason=_noted(said, fixed), inputs_fresh=fresh)
            warm = process.warmup(settings.warmup_steps)
            with clock.judging("outputs"):
                checks = compare(saved_outputs(process, folder / "outputs", references), references, tolerances)
            if all(c.passed for c in checks):  # a row that parted at a near tie: its own tokens after, scored by the reference's model
                with clock.judging("continuation"):
                    checks += continuation.checks(base, folder / "outputs", references, tolerances, folder / "scored")
            if not all(c.passed for c in checks):
                return CandidateResult(levers=names, verdict="REJECTED", reason=_noted(mismatch_reason(checks), fixed), outputs=checks,
                                       warmup_s=sum(warm["wall_s"]), inputs_fresh=fresh)
            with clock.judging("profile"):  # the work only where the candidate runs code Hyperloom did not write (proof.py)
                seen, work = profiled_work(process, folder / "profiled", proof=unreviewed(levers), seed=base_evidence.get("profiled_seed"))
            engaged = engagement(levers if candidate.new is None else candidate.new, seen, base_evidence, warm)
            note = compile_note(seen, base_evidence)
            if not all(e.engaged for e in engaged):
                idle = "; ".join(f"{e.lever} did not take effect: {e.evidence}" for e in engaged if not e.engaged)
                if not candidate.idle_noted:
                    return CandidateResult(levers=names, verdict="NO_OP", reason=_noted(_noted(idle, note), fixed),
                                           engagement=engaged, outputs=checks, warmup_s=sum(warm["wall_s"]), inputs_fresh=fresh, work=work)
                note = _noted(f"at this point {idle}", note)
            short = short_of_work(base_evidence.get("work"), work, levers) if work is not None else None
            if short is not None:
                return CandidateResult(levers=names, verdict="REJECTED", reason=_noted(short, fixed), engagement=engaged, outputs=checks,
                                       warmup_s=sum(warm["wall_s"]), inputs_fresh=fresh, work=work)
            run = paired(base, process, settings, PairGate(tolerances, references, folder / "pairs"))
            clock.add("pairs", run.gate_s)
            rewritten = inputs_rewritten(process.inputs_seen, base.inputs_seen) if unreviewed(levers) else None
    except WorkloadFailure as failure:
        return CandidateResult(levers=names, verdict=failure.status if failure.status in ("CRASH", "TIMEOUT") else "RAISED",
                               reason=_noted(failure.message[:600], fixed), inputs_fresh=fresh)
    return Ran(warm, checks, engaged, note, work, run, rewritten)


def from_the_pairs(candidate: Candidate, against: Against, settings: ABSettings, ran: Ran) -> CandidateResult:
    """The candidate's verdict from its pairs: refused where they say it lied (outputs, digests, tampering, its inputs'
    code, its worker's clock, work moved into inputs) or beat the step's roof; else judged (FASTER or NOT_FASTER), with
    what a reader must know beside it (wall-clock legs, a slowed reference, two paces, more pairs)."""
    names, solo_s, run, work, engaged, checks = candidate.names, against.solo_s, ran.run, ran.work, ran.engaged, ran.checks
    fresh = fresh_inputs(against.process)
    fixed = "" if fresh else INPUTS_FIXED
    timing = run.timing()
    rejected = (run.rejected or ran.rewritten or disagreement(run.candidate, run.reference)
                or inputs_moved(run.candidate, run.reference, settings.noise_band))
    if rejected is not None:
        return CandidateResult(levers=names, verdict="REJECTED", reason=_noted(rejected, fixed), outputs=run.checks or checks,
                               engagement=engaged, baseline_legs_s=run.base_legs, candidate_legs_s=run.cand_legs, inputs_fresh=fresh,
                               work=work, **timing)
    too_fast = impossible(against.evidence.get("roof"), statistics.median(run.cand_legs))
    if too_fast is not None:
        return CandidateResult(levers=names, verdict="IMPOSSIBLE", reason=_noted(too_fast, fixed), outputs=checks, engagement=engaged,
                               baseline_legs_s=run.base_legs, candidate_legs_s=run.cand_legs, inputs_fresh=fresh, work=work,
                               pairs=len(run.cand_legs), **timing)
    result = judge(names, run.base_legs, run.cand_legs, run.device, settings.noise_band, engaged, checks, sum(ran.warm["wall_s"]),
                   settings.alpha())
    result = result.model_copy(update={"baseline_device_step_s": run.base_device, **timing})
    walled = run.walled()
    if walled is not None:
        result = result.model_copy(update={"reason": _noted(result.reason, walled)})
    reference_slowed = slowed(run.base_legs, solo_s, run.base_device)
    for suspect in (reference_slowed, two_paced(run.cand_legs)):  # named: a busy machine reads the same
        if suspect is not None:
            result = result.model_copy(update={"reason": _noted(result.reason, suspect)})
    if reference_slowed is not None and solo_s:
        result = held_alone(result, solo_s, settings.noise_band)
    extended = (f"{len(run.cand_legs)} pairs: undecided after {settings.pairs}, each of {settings.looks()} looks at p < "
                f"{settings.alpha():.3g}"
                if len(run.cand_legs) > settings.pairs else "")
    return result.model_copy(update={"reason": _noted(_noted(_noted(result.reason, extended), ran.note), fixed), "inputs_fresh": fresh,
                                     "work": work})


def held_alone(result: CandidateResult, solo_s: float, noise_band: float) -> CandidateResult:
    """A FASTER judged beside a slowed reference (clock_checks.slowed) stands only if the candidate also beats the reference's
    solo pace beyond the noise band: a ratio over a slowed reference is inflated by about the slowdown, so a candidate
    that merely matched the baseline would read FASTER there. Otherwise NOT_FASTER, saying so. One that stands carries
    the lower of its two figures (docs/decisions.md: A reference slowed beside the candidate)."""
    if result.verdict != "FASTER" or not result.candidate_legs_s:
        return result
    alone = solo_s / statistics.median(result.candidate_legs_s)
    if alone > 1 + noise_band:  # it stands, at the figure against the solo pace where that is the lower (a campaign ranks rivals by it)
        if result.speedup is None or alone >= result.speedup:
            return result
        scale = alone / result.speedup  # the pairs' interval moved with the figure: against the solo pace
        interval = [bound * scale for bound in result.speedup_ci95] if result.speedup_ci95 else result.speedup_ci95
        return result.model_copy(update={"speedup": alone, "speedup_ci95": interval,
                                         "reason": f"{alone:.3g}x against the reference's solo pace (the pairs read "
                                                   f"{result.speedup:.3g}x beside a slowed reference); " + result.reason})
    return result.model_copy(update={"verdict": "NOT_FASTER",
                                     "reason": f"faster only beside a slowed reference: {alone:.3g}x the reference's solo "
                                              f"pace, not beyond the noise band of {noise_band:.0%}; " + result.reason})


INPUTS_FIXED = "inputs fixed: memoization not excluded (the workload has no inputs(seed))"


def _noted(reason: str, note: str) -> str:
    return f"{reason}; {note}" if note else reason


def paced(settings: ABSettings, step_s: float, inputs_s: float | None = None, device_timed: bool = False) -> ABSettings:
    """The settings with the steps a leg paced_steps gives at the reference's pace (pacing.py)."""
    return replace(settings, steps_per_leg=paced_steps(settings.steps_per_leg, step_s, inputs_s, device_timed))


def calibrated(settings: ABSettings, same: CandidateResult) -> ABSettings:
    """The settings with the noise band widened to what a worker doing the reference's own work measured against it
    (`same`, an A/A trial): each worker process runs at its own pace for its whole life (where the OS put it, its
    memory, its caches), so every pair of one trial leans the same way, and a same-work worker can pass a sign test.
    Measured on a loaded 2-core CPU: one of four same-work workers 1.06x, 8 of 8 pairs. A gain counts beyond that."""
    if same.speedup is None:
        return settings
    return replace(settings, noise_band=max(settings.noise_band, abs(same.speedup - 1.0)))


def disturbed(same: CandidateResult, solo_s: float | None) -> str | None:
    """Why an A/A cannot stand for the process-to-process noise, or None: its reference slowed beside the second worker
    (beyond SOLO_PACE x `solo_s`, where known), or either side's legs at two paces (clock_checks.two_paced)."""
    return (slowed(same.baseline_legs_s, solo_s) or two_paced(same.baseline_legs_s)
            or two_paced(same.candidate_legs_s))


def same_work_note(same: CandidateResult, band: float, solo_s: float | None = None) -> str:
    """How the A/A trial reads, for a report: the process-to-process noise, what it is made of (band_parts), and the
    band a gain had to clear."""
    if same.speedup is None:
        return f"a second reference worker could not be timed ({same.verdict}: {same.reason[:200]}); a gain counted beyond {band:.1%}"
    return (f"a second worker doing the reference's own work timed {same.speedup:.3g}x the reference ({same.candidate_faster}/{same.pairs} "
            f"pairs faster): process-to-process noise, made of {band_parts(same, solo_s)}; a gain counted beyond {band:.1%}")


def band_parts(same: CandidateResult, solo_s: float | None = None) -> str:
    """What an A/A's gap is made of, each part a ratio of the reference's median to the second worker's: the figure
    (device time on a GPU), the windows on the workers' wall clocks (the hosts' pace), inputs(seed) outside the window,
    and the reference beside the second worker against its own solo pace (a machine that got busy)."""
    def ratio(mine: list[float], theirs: list[float]) -> float | None:
        return statistics.median(theirs) / statistics.median(mine) if mine and theirs and statistics.median(mine) > 0 else None

    parts = [f"{same.speedup:.3g}x on the figure ({'device time' if same.device_step_s is not None else 'the wall clock of the step'})"]
    wall = ratio(same.worker_legs_s, same.baseline_wall_legs_s)
    if wall is not None and same.device_step_s is not None:
        parts.append(f"{wall:.3g}x on the workers' wall clocks (the hosts' pace)")
    if same.inputs_step_s and same.baseline_inputs_step_s:
        parts.append(f"inputs(seed) {same.baseline_inputs_step_s * 1e3:.3g} and {same.inputs_step_s * 1e3:.3g} ms a step, outside the "
                     "window")
    pace = paired_pace(same.baseline_legs_s, solo_s)
    if pace is not None:
        parts.append(f"the reference at {pace:.3g}x its solo pace beside the second worker")
    return ", ".join(parts)


@dataclass(frozen=True)
class PairGate:
    """What each pair's outputs are gated with: the reference's outputs of the same seeds stand for the references;
    `tolerances` empty: nothing gated (the workload has no outputs)."""

    tolerances: dict[str, OutputTolerance]
    references: dict[str, np.ndarray]
    folder: Path


@dataclass
class Paired:
    """The interleaved pairs: the reference's and the candidate's legs (seconds a step, the controller's clock), the
    candidate's legs as its worker told them, its median device step, and why it is refused (None: it is not)."""

    base_legs: list[float] = field(default_factory=list)
    cand_legs: list[float] = field(default_factory=list)
    device: float | None = None
    rejected: str | None = None
    candidate: list[Leg] = field(default_factory=list)
    reference: list[Leg] = field(default_factory=list)
    checks: list[OutputCheck] = field(default_factory=list)  # the failing pair's, when the outputs refused it
    gate_s: float = 0.0  # the controller's seconds reading, comparing and deleting the pairs' outputs

    def extended(self, more: Paired) -> Paired:
        return Paired(self.base_legs + more.base_legs, self.cand_legs + more.cand_legs, more.device if self.device is None else self.device,
                      more.rejected, self.candidate + more.candidate, self.reference + more.reference, more.checks,
                      self.gate_s + more.gate_s)

    @property
    def base_device(self) -> float | None:
        """The reference's median device time a step over its paired legs (GPU only): with its legs, where its time went."""
        device = [s for timed in self.reference for s in timed.device_s]
        return statistics.median(device) if device else None

    def timing(self) -> dict[str, Any]:
        """What a result says beside the figures: each side's windows on the worker's clock, and inputs(seed) a step."""
        inputs = [x.inputs_step_s for x in self.candidate if x.inputs_s]
        base_inputs = [x.inputs_step_s for x in self.reference if x.inputs_s]
        return {"worker_legs_s": [x.wall_step_s for x in self.candidate], "baseline_wall_legs_s": [x.wall_step_s for x in self.reference],
                "inputs_step_s": statistics.median(inputs) if inputs else None,
                "baseline_inputs_step_s": statistics.median(base_inputs) if base_inputs else None}

    def walled(self) -> str | None:
        """Where either side's legs stood on the wall clock rather than device time, why (the first such leg's)."""
        for side, legs in (("the candidate's", self.candidate), ("the reference's", self.reference)):
            walled = [x for x in legs if x.figure not in ("device", "wall")]
            if walled:
                return f"{len(walled)} of {side} {len(legs)} legs timed on {walled[0].figure}"
        return None


def interleave(base: Any, candidate: Any, pairs: int, steps_per_leg: int, gate: PairGate | None = None) -> Paired:
    """`pairs` pairs of legs, the order alternating, each worker stopped while the other's leg runs. Both legs of a pair
    consume the same fresh seeds (when the workload takes them); with a gate, one step of the pair drawn after its legs
    ran has the candidate's outputs judged against the reference's of the same inputs (read and deleted before the
    candidate's leg can see them), and every step's digests against the reference's (digest.py)."""
    run, device = Paired(), []
    seeded = fresh_inputs(base)
    gated = gate is not None and bool(gate.tolerances)
    held = digest_bounds(gate.tolerances, gate.references) if gate is not None and gated else {}
    keep_all = keeps_every_step(gate.references if gate is not None else {}, steps_per_leg)
    for index in range(pairs):
        seeds = draw_seeds(steps_per_leg) if seeded else None
        chosen = gated_step(steps_per_leg)
        where = gate.folder / f"pair{len(run.cand_legs)}" if gate is not None and gated else None
        order = (base, candidate) if index % 2 == 0 else (candidate, base)
        references: dict[str, np.ndarray] = {}
        for process in order:
            mine = process is base
            folder = where / ("reference" if mine else "candidate") if where is not None else None
            timed = leg(process, steps_per_leg, seeds, folder, other=candidate if mine else base, gated=chosen, keep_all=keep_all)
            if mine:
                run.base_legs.append(timed.step_s)
                run.reference.append(timed)
                if folder is not None:
                    began = perf_counter()
                    references = load_outputs(folder, list(gate.references))
                    shutil.rmtree(folder, ignore_errors=True)
                    same_shapes(references, gate.references, seeds[timed.saved_step or 0] if seeds else None)
                    run.gate_s += perf_counter() - began
                continue
            run.cand_legs.append(timed.step_s)
            run.candidate.append(timed)
            device += timed.device_s
            if timed.tampered:
                run.rejected = tampered_reason(timed.tampered, f"after its timed leg {len(run.cand_legs)}")
        began = perf_counter()
        if run.rejected is None and where is not None:
            step = run.candidate[-1].saved_step or 0
            said = f" with seed {seeds[step]}" if seeds else " (inputs fixed)"
            checks = compare(where / "candidate", references, gate.tolerances)
            if not all(c.passed for c in checks):
                run.checks = checks
                run.rejected = (f"outputs of timed step {step + 1} of pair {len(run.cand_legs)}{said}, against the reference's of the same "
                                "inputs: " + mismatch_reason(checks))
            else:
                unproduced = digest_mismatch(run.candidate[-1].digests, run.reference[-1].digests, held)
                if unproduced is not None:
                    run.rejected = f"outputs of pair {len(run.cand_legs)}: {unproduced}"
        if where is not None:
            shutil.rmtree(where, ignore_errors=True)
        run.gate_s += perf_counter() - began
        if run.rejected is not None:
            break
    run.device = statistics.median(device) if device else None
    return run


def paired(base: Any, candidate: Any, settings: ABSettings, gate: PairGate | None = None) -> Paired:
    """Interleaved pairs (interleave), and another round of `pairs` while the candidate is undecided: not FASTER at
    its look's share of the error rate (Bonferroni over settings.looks()) yet its median beyond the noise band."""
    run = interleave(base, candidate, settings.pairs, settings.steps_per_leg, gate)
    for _ in range(settings.looks() - 1):
        if run.rejected is not None:
            break
        sofar = judge([], run.base_legs, run.cand_legs, run.device, settings.noise_band, [], [], 0.0, settings.alpha())
        if sofar.verdict == "FASTER" or (sofar.speedup or 0) <= 1 + settings.noise_band:
            break
        run = run.extended(interleave(base, candidate, settings.pairs, settings.steps_per_leg, gate))
    return run


def judge(names: list[str], base_legs: list[float], cand_legs: list[float], device: float | None, noise_band: float, engaged: list,
          checks: list[OutputCheck], warmup_s: float, alpha: float = ALPHA) -> CandidateResult:
    """FASTER when the candidate's slowest leg beat the reference's fastest, or the sign test says so (at `alpha`)
    beyond the noise band."""
    ratios = [b / c for b, c in zip(base_legs, cand_legs, strict=True) if c > 0]
    wins = sum(r > 1 for r in ratios)
    p = sign_test_p(wins, len(ratios))
    speedup = statistics.median(ratios)  # each pair's own ratio: a drift of the machine between pairs cancels out
    non_overlap = max(cand_legs) < min(base_legs)
    interval = ratio_ci(ratios)
    # the gain's lower bound beyond the noise band, not its median; legs apart count only for a median beyond it too
    faster = (non_overlap and speedup > 1 + noise_band) or (p < alpha and interval[0] > 1 + noise_band)
    short = ("" if faster
             else f"; its 95 % interval ({interval[0]:.3g}-{interval[1]:.3g}x) not beyond the noise band of {noise_band:.0%} "
                  f"at p < {alpha:.3g}")
    reason = (f"{speedup:.3g}x: slowest candidate leg {max(cand_legs) * 1e3:.3g} ms beat the fastest baseline leg "
              f"{min(base_legs) * 1e3:.3g} ms" if non_overlap
              else f"{speedup:.3g}x, faster in {wins}/{len(ratios)} pairs (sign test p = {p:.3f}){short}")
    return CandidateResult(levers=names, verdict="FASTER" if faster else "NOT_FASTER", reason=reason, speedup=speedup,
                           speedup_ci95=interval, pairs=len(ratios), candidate_faster=wins, sign_test_p=p, non_overlap=non_overlap,
                           baseline_legs_s=base_legs, candidate_legs_s=cand_legs, device_step_s=device, warmup_s=warmup_s,
                           engagement=engaged, outputs=checks)


def ratio_ci(ratios: list[float]) -> list[float]:
    """A distribution-free 95 % interval of the per-pair ratios' median (order statistics); their range below 6 pairs."""
    ordered = sorted(ratios)
    n = len(ordered)
    if n < 6:
        return [ordered[0], ordered[-1]]
    low = max(0, int(math.floor(n / 2 - Z95 * math.sqrt(n) / 2)))
    high = min(n - 1, int(math.ceil(n / 2 + Z95 * math.sqrt(n) / 2)))
    return [ordered[low], ordered[high]]


def mismatch_reason(checks: list[OutputCheck]) -> str:
    return "outputs out of tolerance: " + "; ".join(f"{c.output}: {c.detail}" for c in checks if not c.passed)[:600]
