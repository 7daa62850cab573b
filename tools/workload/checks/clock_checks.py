"""Why a trial's timed legs (timed.py) cannot be believed as they read: the worker's windows short of what the
controller's clock saw, work moved into inputs(seed), a reference slowed beside the candidate, a candidate at two
paces. Each returns the reason as a reader checks it, or None."""

from __future__ import annotations

import statistics

from hyperloom.tools.workload.timed import Leg

CLOCK_SLACK_S = 4e-3
"""What a call may leave unaccounted beyond the reference's, a leg: on a 2-core CPU at a load of 3-4, an honest
candidate's worker left 3.3 ms a leg more than its reference's (the wake-ups of two processes taking turns)."""
UNACCOUNTED_SHARE = 0.25
"""The share of its claimed windows a leg may leave unaccounted beyond the reference's: a clock that under-reports its
windows by a fifth or more shows up here, where the slack above does not hide it. A backstop: the tamper check names a
patched or swapped timer outright."""
INPUTS_BAND = 0.25
INPUTS_SPREAD = 3.0
INPUTS_SLACK_S = 2e-5
"""inputs(seed) may take longer in the candidate's worker than in the reference's on the same seeds by the largest of
the noise band of the reference's step, INPUTS_BAND of the reference's inputs (each worker keeps its own pace on a busy
host: 12 % apart on a loaded 2-core CPU, the same draw in both), INPUTS_SPREAD standard errors of the pairs'
differences, and INPUTS_SLACK_S. A backstop: what inputs(seed) runs is traced in every leg (proof.inputs_rewritten)."""
SOLO_PACE = 1.3
"""The reference's paired legs slower than this many times its solo legs: something slowed it beside the candidate, and
a ratio over a slowed reference is inflated by about the slowdown (docs/decisions.md: A reference slowed beside the
candidate)."""
SPLIT_PACE = 1.5
"""two_paced: a gap in the candidate's sorted legs beyond this ratio splits them into two paces."""


def unaccounted_s(leg: Leg) -> float:
    """The seconds a step of `leg`'s call that its worker did not account for (outside its windows and its inputs)."""
    steps = max(len(leg.window_s), 1)
    return max(leg.controller_s - leg.worker_s, 0.0) / steps


def disagreement(legs: list[Leg], reference: list[Leg] | None = None) -> str | None:
    """Why the worker's windows cannot be believed, or None: a step of its calls left more unaccounted on the
    controller's clock than a step of the reference's did (the harness's own cost, the same in both workers, cancels
    out), by more than the larger of CLOCK_SLACK_S a leg, UNACCOUNTED_SHARE of the windows it claims, and half the
    reference's own: a patched timer, work between the windows. Each side's least leg is read: a timer that lies
    lies in every leg, while a busy host adds time to some (on a loaded 2-core CPU 2.8 ms a step in one leg of six,
    0.3-0.4 ms in the rest)."""
    if not legs:
        return None
    mine = min(unaccounted_s(x) for x in legs)
    theirs = min(unaccounted_s(x) for x in reference) if reference else 0.0
    claimed = statistics.median(x.wall_step_s for x in legs)
    steps = max(len(legs[0].window_s), 1)
    limit = max(CLOCK_SLACK_S / steps, UNACCOUNTED_SHARE * claimed, 0.5 * theirs)
    if mine - theirs <= limit:
        return None
    return (f"the worker's clock disagrees with the controller's: in every leg at least {mine * 1e3:.3g} ms a step of its calls were "
            f"outside its timed windows and its inputs(seed) on the controller's clock (round trips taken off), against {theirs * 1e3:.3g} "
            f"ms for the reference's worker, beyond {limit * 1e3:.3g} ms; it claims {claimed * 1e3:.3g} ms a step")


def inputs_moved(legs: list[Leg], reference: list[Leg], noise_band: float) -> str | None:
    """Why the candidate's inputs(seed) cannot be left outside its windows, or None: on the same seeds (a pair's two legs)
    it took longer than the reference's, in the pairs' median, beyond what the process-to-process noise allows
    (INPUTS_BAND and the rest): work moved there, out of the timed window (a wrapped callee, a result computed ahead)."""
    pairs = [(mine.inputs_step_s, theirs.inputs_step_s) for mine, theirs in zip(legs, reference, strict=False)
             if mine.inputs_s and theirs.inputs_s]
    if not pairs:
        return None
    differences = [mine - theirs for mine, theirs in pairs]
    excess = statistics.median(differences)
    spread = 1.4826 * statistics.median(abs(d - excess) for d in differences) / len(differences) ** 0.5
    step_s = statistics.median(x.step_s for x in reference)
    limit = max(noise_band * step_s, INPUTS_BAND * statistics.median(theirs for _, theirs in pairs), INPUTS_SPREAD * spread, INPUTS_SLACK_S)
    if excess <= limit:
        return None
    mine_s, theirs_s = statistics.median(m for m, _ in pairs), statistics.median(t for _, t in pairs)
    return (f"its inputs(seed) took {mine_s * 1e3:.3g} ms a step against the reference's {theirs_s * 1e3:.3g} ms on the same seeds "
            f"({excess * 1e3:.3g} ms more, beyond {limit * 1e3:.3g} ms; the reference's step {step_s * 1e3:.3g} ms): work moved out of the "
            "timed window")


def paired_pace(paired_s: list[float], solo_s: float | None) -> float | None:
    """The reference's paired legs' median as a multiple of its median alone, or None where either is unknown."""
    if not paired_s or not solo_s:
        return None
    return statistics.median(paired_s) / solo_s


def slowed(paired_s: list[float], solo_s: float | None, device_s: float | None = None) -> str | None:
    """Why the reference's paired legs cannot be believed, or None: their median was more than SOLO_PACE times its
    median alone (a process of the candidate's that escaped the stop, or a machine that got busy). `device_s`: the
    reference's median device time a step in the pairs (GPU), said beside it."""
    pace = paired_pace(paired_s, solo_s)
    if pace is None or pace <= SOLO_PACE:
        return None
    median_s = statistics.median(paired_s)
    device = f"; its device time {device_s * 1e3:.3g} ms a step in the pairs" if device_s else ""
    return (f"the reference ran at {median_s / solo_s:.2f}x its solo pace in the pairs ({median_s * 1e3:.3g} ms a step beside the "
            f"candidate, {solo_s * 1e3:.3g} ms alone{device}): something slowed it while the candidate's worker was stopped (a process of "
            "the candidate's that escaped the stop, or a machine that got busy: measure again on a quiet machine)")


def two_paced(legs_s: list[float]) -> str | None:
    """Why the candidate's legs cannot be read as one pace, or None: sorted, they split where one leg is more than
    SPLIT_PACE times the one before, with at least two legs on each side (a busy host, a recompile, a graph re-recorded
    in some legs)."""
    ordered = sorted(legs_s)
    if len(ordered) < 4 or ordered[0] <= 0:
        return None
    ratio, at = max((ordered[i] / ordered[i - 1], i) for i in range(2, len(ordered) - 1))
    if ratio <= SPLIT_PACE:
        return None
    fast, slow = ordered[:at], ordered[at:]
    return (f"the candidate ran at two paces: {len(fast)} legs near {statistics.median(fast) * 1e3:.3g} ms a step, {len(slow)} near "
            f"{statistics.median(slow) * 1e3:.3g} ms (something competed with its process in some legs: a busy host, a recompile, "
            "a graph re-recorded; the verdict is on the mix)")
