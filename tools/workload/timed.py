"""The controller's timed leg: seeds the candidate cannot predict, the controller's own clock around the call, and the
other worker stopped while it runs.

The seeds are drawn here (secrets, after the candidate is built) and sent in the call, one per step; a leg's time
is time.perf_counter around the worker's `time_steps` call, less the round trip of an empty call to that process.
The worker's own account of the call comes back beside it, and is only checked against this clock. While one
worker's leg runs, the other worker (its process group, and any process it started elsewhere) is stopped with
SIGSTOP, and continued with SIGCONT whatever happens (guardian.py: even when this process dies mid-leg), so neither
can work ahead, nor burn the CPU the timed one needs.
"""

from __future__ import annotations

import secrets
import signal
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter, sleep
from typing import Any

from hyperloom.core.family import family as members_of, signal_all, state
from hyperloom.tools.workload.guardian import GUARDIAN

SEED_BITS = 63
CLOCK_AGREEMENT = 0.7
"""The worker's account of its legs below this share of the controller's clock (round trips taken off): it lied."""
CLOCK_SLACK_S = 1e-3
"""What a call may cost beyond the worker's account of it and the round trip, a leg: measured 0.05-0.3 ms on a loaded
2-core CPU, one hiccup 3.8 ms. Legs of steps shorter than that are judged by the controller's clock alone."""
STOP_WAIT_S = 0.2
SOLO_PACE = 1.3
"""The reference's paired legs slower than this many times its solo legs: something slowed it beside the candidate. On
the H200 a conv net's compile was kept at 2.81x beside a reference at 1.49x its solo pace (unflagged at 1.5) and
revalidated at 1.82x: a ratio over a slowed reference is inflated by about the slowdown."""
SPLIT_PACE = 1.5
"""two_paced: a gap in the candidate's sorted legs beyond this ratio splits them into two paces."""


@dataclass(frozen=True)
class Leg:
    """One timed leg: the controller's seconds per step, and what the worker said about it."""

    step_s: float  # the controller's clock around the call, less the round trip, per step
    controller_s: float  # the whole call on the controller's clock, less the round trip
    worker_s: float  # the worker's account of the whole call
    worker_step_s: list[float]  # the worker's account of each step (step and outputs on the host)
    device_s: list[float]
    tampered: list[str]
    seeds: list[int] | None


def draw_seeds(steps: int) -> list[int]:
    """One fresh seed per step, drawn now: after the candidate's code was built, so it cannot be known ahead."""
    return [secrets.randbits(SEED_BITS) for _ in range(steps)]


def leg(process: Any, steps: int, seeds: list[int] | None, folder: Path | None, other: Any = None) -> Leg:
    """`steps` steps of `process` (one per seed when seeded), timed by this process's clock while `other` is stopped;
    the last step's outputs (materialized on the host inside the clock) saved in `folder` when given, after it."""
    round_trip_s = process.round_trip_s()
    with stopped(other):
        began = perf_counter()
        reported = process.time(steps, seeds=seeds)
        elapsed_s = perf_counter() - began
        tampered = list(reported.get("tampered", []))
        if folder is not None:
            tampered += [name for name in process.save_timed(folder).get("tampered", []) if name not in tampered]
    controller_s = max(elapsed_s - round_trip_s, 0.0)
    walls = [float(w) for w in reported["wall_s"]]
    return Leg(step_s=controller_s / max(len(walls), 1), controller_s=controller_s, worker_s=float(reported.get("elapsed_s", sum(walls))),
               worker_step_s=walls, device_s=list(reported.get("device_s", [])), tampered=tampered, seeds=seeds)


def disagreement(legs: list[Leg], reference: list[Leg] | None = None) -> str | None:
    """Why the worker's clock cannot be believed, or None: over all its legs it accounted for less than CLOCK_AGREEMENT
    of the share of the controller's time the reference's worker accounted for over its own legs (what a call costs
    beyond its steps, the same in both processes, cancels out; 1 without a reference) and by more than CLOCK_SLACK_S a
    leg: a patched timer, a step that shrank the time it was seen to take."""
    worker_s, controller_s = sum(x.worker_s for x in legs), sum(x.controller_s for x in legs)
    honest = _share(reference or []) or 1.0
    if not legs or controller_s <= 0 or worker_s >= CLOCK_AGREEMENT * honest * controller_s or controller_s - worker_s <= CLOCK_SLACK_S * len(legs):
        return None
    return (f"the worker's clock disagrees with the controller's: it accounted for {worker_s * 1e3:.3g} ms over {len(legs)} legs that the "
            f"controller timed at {controller_s * 1e3:.3g} ms ({worker_s / controller_s:.2f}x, round trips taken off; the reference's worker "
            f"{honest:.2f}x)")


def _share(legs: list[Leg]) -> float | None:
    controller_s = sum(x.controller_s for x in legs)
    return min(1.0, sum(x.worker_s for x in legs) / controller_s) if controller_s > 0 else None


def paired_pace(paired_s: list[float], solo_s: float | None) -> float | None:
    """The reference's paired legs' median as a multiple of its median alone, or None where either is unknown."""
    if not paired_s or not solo_s:
        return None
    return statistics.median(paired_s) / solo_s


def slowed(paired_s: list[float], solo_s: float | None, device_s: float | None = None) -> str | None:
    """Why the reference's paired legs cannot be believed, or None: their median was more than SOLO_PACE times its
    median alone (a process of the candidate's that escaped the stop, or a machine that got busy). `device_s`: the
    reference's median device time a step in the pairs (GPU), said beside it: the rest of a leg was the host's."""
    pace = paired_pace(paired_s, solo_s)
    if pace is None or pace <= SOLO_PACE:
        return None
    median_s = statistics.median(paired_s)
    device = f"; its device time {device_s * 1e3:.3g} ms a step in the pairs" if device_s else ""
    return (f"the reference ran at {median_s / solo_s:.2f}x its solo pace in the pairs ({median_s * 1e3:.3g} ms a step beside the candidate, "
            f"{solo_s * 1e3:.3g} ms alone{device}): something slowed it while the candidate's worker was stopped (a process of the candidate's "
            "that escaped the stop, or a machine that got busy: measure again on a quiet machine)")


def two_paced(legs_s: list[float]) -> str | None:
    """Why the candidate's legs cannot be read as one pace, or None: sorted, they split where one leg is more than
    SPLIT_PACE times the one before, with at least two legs on each side. On the H200 compiled candidates switched
    leg by leg between their pace and about twice it, the extra time on the host (results/h200/user-workloads/stall/)."""
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


@contextmanager
def stopped(process: Any) -> Iterator[None]:
    """`process`'s worker and every process it started stopped (SIGSTOP) for the block, continued (SIGCONT) after it."""
    pid = getattr(process, "pid", None)
    family = members_of(pid) if pid is not None else []
    if not family:
        yield
        return
    held = GUARDIAN.hold(family)  # continued by the guardian should this process die before the finally below
    try:
        signal_all(family, signal.SIGSTOP)
        _until_stopped(family)
        yield
    finally:
        signal_all(family, signal.SIGCONT)
        GUARDIAN.release(held)


def _until_stopped(family: list[int]) -> None:
    """Wait (briefly) until every member is seen stopped: a signal is delivered when the process is next scheduled."""
    deadline = perf_counter() + STOP_WAIT_S
    waiting = list(family)
    while waiting and perf_counter() < deadline:
        waiting = [pid for pid in waiting if state(pid) not in ("T", "t", "Z", "X", None)]
        if waiting:
            sleep(0.0005)
