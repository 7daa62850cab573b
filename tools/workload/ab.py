"""One candidate judged beside a live reference process: built with its levers, gated on reference outputs,
checked for engagement, then A/B-timed in interleaved pairs and judged with a sign test. A candidate left undecided
(its median beyond the noise band, the test not yet) gets more pairs, up to `max_pairs`, each look at a share of
the error rate so that looking again does not make a gain out of noise.

workload_bench calls it with the pure baseline as the reference and the frozen outputs as references; optimize
also with a stack of kept levers as the reference (so a change is measured on top of what is kept) and, in its
sweep, with a baseline rebuilt at another point and its live outputs. The order of judgement is bench.py's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.stats import sign_test_p
from hyperloom.tools.runtime.sampling import Z95, median_ci_halfwidth
from hyperloom.tools.workload.engagement import compile_note, engagement
from hyperloom.tools.workload.frozen import compare
from hyperloom.tools.workload.levers import Lever
from hyperloom.tools.workload.models import CandidateResult, OutputCheck, OutputTolerance
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess
from hyperloom.tools.workload.twin import TEACHER, teacher_of

ALPHA = 0.05


@dataclass(frozen=True)
class ABSettings:
    """How a candidate is warmed and timed beside its reference."""

    pairs: int
    steps_per_leg: int
    warmup_steps: int
    noise_band: float
    timeout_s: float
    max_pairs: int | None = None  # more pairs for an undecided candidate, in rounds of `pairs`; None: `pairs` only

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
    """Outputs a process saved (saved_outputs), read back as references; teacher-forced logits only where saved."""
    return {name: np.load(folder / f"{name}.npy", allow_pickle=False) for name in names if not name.endswith(TEACHER) or (folder / f"{name}.npy").is_file()}


def baseline_legs(base: WorkloadProcess, steps_per_leg: int, target_ci: float, max_legs: int) -> tuple[list[float], float | None]:
    """Legs of the reference alone until its median's CI is within target_ci (or max_legs)."""
    legs, device = [], []
    while len(legs) < max_legs:
        timed = base.time(steps_per_leg)
        legs.append(statistics.median(timed["wall_s"]))
        device += timed["device_s"]
        if len(legs) >= 6 and median_ci_halfwidth(legs) <= target_ci:
            break
    return legs, statistics.median(device) if device else None


def trial(names: list[str], levers: list[Lever], base: WorkloadProcess, base_evidence: dict[str, Any], references: dict[str, np.ndarray],
          tolerances: dict[str, OutputTolerance], settings: ABSettings, folder: Path, workspace: Workspace, target: Target,
          new: list[Lever] | None = None, device: int | None = None, backend: str = "cuda") -> CandidateResult:
    """The candidate `names` (built from `target` with `levers`) judged beside `base`; engagement is checked for
    `new` (default every lever): levers the reference already holds left their evidence there too. `device` pins the
    candidate's worker to a GPU through `backend`'s variable (tools/runtime/visible.py)."""
    try:
        with WorkloadProcess(target, levers, folder, workspace, settings.timeout_s, device=device, backend=backend) as process:
            warm = process.warmup(settings.warmup_steps)
            checks = compare(saved_outputs(process, folder / "outputs", references), references, tolerances)
            if not all(c.passed for c in checks):
                return CandidateResult(levers=names, verdict="REJECTED", reason=mismatch_reason(checks), outputs=checks, warmup_s=sum(warm["wall_s"]))
            seen = process.engagement()
            engaged = engagement(levers if new is None else new, seen, base_evidence, warm)
            note = compile_note(seen, base_evidence)
            if not all(e.engaged for e in engaged):
                off = [e for e in engaged if not e.engaged]
                return CandidateResult(levers=names, verdict="NO_OP", reason=_noted("; ".join(f"{e.lever} did not take effect: {e.evidence}" for e in off), note),
                                       engagement=engaged, outputs=checks, warmup_s=sum(warm["wall_s"]))
            base_legs, cand_legs, cand_device = paired(base, process, settings)
            after = compare(saved_outputs(process, folder / "outputs_after", references), references, tolerances)
    except WorkloadFailure as failure:
        return CandidateResult(levers=names, verdict=failure.status if failure.status in ("CRASH", "TIMEOUT") else "RAISED", reason=failure.message[:600])
    if not all(c.passed for c in after):
        return CandidateResult(levers=names, verdict="REJECTED", reason="after the timed steps: " + mismatch_reason(after), outputs=after,
                               engagement=engaged, baseline_legs_s=base_legs, candidate_legs_s=cand_legs)
    result = judge(names, base_legs, cand_legs, cand_device, settings.noise_band, engaged, checks, sum(warm["wall_s"]), settings.alpha())
    extended = (f"{len(cand_legs)} pairs: undecided after {settings.pairs}, each of {settings.looks()} looks at p < {settings.alpha():.3g}"
                if len(cand_legs) > settings.pairs else "")
    return result.model_copy(update={"reason": _noted(_noted(result.reason, extended), note)})


def _noted(reason: str, note: str) -> str:
    return f"{reason}; {note}" if note else reason


def calibrated(settings: ABSettings, same: CandidateResult) -> ABSettings:
    """The settings with the noise band widened to what a worker doing the reference's own work measured against it
    (`same`, an A/A trial): each worker process runs at its own pace for its whole life (where the OS put it, its
    memory, its caches), so every pair of one trial leans the same way, and a same-work worker can pass a sign test.
    Measured on a loaded 2-core CPU: one of four same-work workers 1.06x, 8 of 8 pairs. A gain counts beyond that."""
    if same.speedup is None:
        return settings
    return replace(settings, noise_band=max(settings.noise_band, abs(same.speedup - 1.0)))


def same_work_note(same: CandidateResult, band: float) -> str:
    """How the A/A trial reads, for a report: the process-to-process noise and the band a gain had to clear."""
    if same.speedup is None:
        return f"a second reference worker could not be timed ({same.verdict}: {same.reason[:200]}); a gain counted beyond {band:.1%}"
    return (f"a second worker doing the reference's own work timed {same.speedup:.3g}x the reference ({same.candidate_faster}/{same.pairs} pairs "
            f"faster): process-to-process noise; a gain counted beyond {band:.1%}")


def interleave(base: WorkloadProcess, candidate: WorkloadProcess, pairs: int, steps_per_leg: int) -> tuple[list[float], list[float], float | None]:
    """`pairs` pairs of legs, the order alternating: (reference legs, candidate legs, the candidate's median device step)."""
    base_legs, cand_legs, device = [], [], []
    for index in range(pairs):
        order = (base, candidate) if index % 2 == 0 else (candidate, base)
        for process in order:
            timed = process.time(steps_per_leg)
            leg = statistics.median(timed["wall_s"])
            if process is base:
                base_legs.append(leg)
            else:
                cand_legs.append(leg)
                device += timed["device_s"]
    return base_legs, cand_legs, statistics.median(device) if device else None


def paired(base: Any, candidate: Any, settings: ABSettings) -> tuple[list[float], list[float], float | None]:
    """Interleaved pairs (interleave), and another round of `pairs` while the candidate is undecided: not FASTER at
    its look's share of the error rate (Bonferroni over settings.looks()) yet its median beyond the noise band."""
    base_legs, cand_legs, device = interleave(base, candidate, settings.pairs, settings.steps_per_leg)
    for _ in range(settings.looks() - 1):
        sofar = judge([], base_legs, cand_legs, device, settings.noise_band, [], [], 0.0, settings.alpha())
        if sofar.verdict == "FASTER" or (sofar.speedup or 0) <= 1 + settings.noise_band:
            break
        more_base, more_cand, more_device = interleave(base, candidate, settings.pairs, settings.steps_per_leg)
        base_legs, cand_legs, device = base_legs + more_base, cand_legs + more_cand, more_device if device is None else device
    return base_legs, cand_legs, device


def judge(names: list[str], base_legs: list[float], cand_legs: list[float], device: float | None, noise_band: float, engaged: list, checks: list[OutputCheck],
          warmup_s: float, alpha: float = ALPHA) -> CandidateResult:
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
    short = "" if faster else f"; its 95 % interval ({interval[0]:.3g}-{interval[1]:.3g}x) not beyond the noise band of {noise_band:.0%} at p < {alpha:.3g}"
    reason = (f"{speedup:.3g}x: slowest candidate leg {max(cand_legs) * 1e3:.3g} ms beat the fastest baseline leg {min(base_legs) * 1e3:.3g} ms" if non_overlap
              else f"{speedup:.3g}x, faster in {wins}/{len(ratios)} pairs (sign test p = {p:.3f}){short}")
    return CandidateResult(levers=names, verdict="FASTER" if faster else "NOT_FASTER", reason=reason, speedup=speedup, speedup_ci95=interval,
                           pairs=len(ratios), candidate_faster=wins, sign_test_p=p, non_overlap=non_overlap, baseline_legs_s=base_legs,
                           candidate_legs_s=cand_legs, device_step_s=device, warmup_s=warmup_s, engagement=engaged, outputs=checks)


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
