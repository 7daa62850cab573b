"""The controller's timed leg: seeds the candidate cannot predict, the figure read off the worker's timed windows, the
controller's own clock around the call, and the other worker stopped while it runs.

The seeds are drawn here (secrets, after the candidate is built) and sent in the call, one per step. The worker times
each step in a window of its own (window.py), with inputs(seed) before it: a leg's figure is the mean of its windows,
device time on the step's stream on a GPU (as do_bench times a call), the window's wall clock on a CPU or where the wall
clock stood well above the device time (work off the timed stream). The controller's perf_counter around the call, less
the round trip of an empty call, bounds what the worker says (clock_checks.py). While one worker's leg runs, the other
worker (its process group, and any process it started elsewhere) is stopped with SIGSTOP, and continued with SIGCONT
whatever happens (guardian.py: even when this process dies mid-leg), so neither can work ahead, nor burn the CPU the
timed one needs.
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter, sleep
from typing import Any

from hyperloom.core.family import family as members_of, signal_all, state
from hyperloom.tools.workload.guardian import GUARDIAN
from hyperloom.tools.workload.wire import TimeStepsAnswer

SEED_BITS = 63
KEEP_BYTES = 256 * 2**20
"""The most a leg keeps of its steps' outputs (on their device, until the gate copies one) for the gated step to be
drawn from all of them; beyond it only the last step's are kept and gated."""
STOP_WAIT_S = 0.2
WALL_OVER = 0.05
WALL_SLACK_S = 1e-4
"""A GPU step's windows on the worker's clock may exceed their device time by this share plus this much a step (the
synchronize's wake-up, the start event's enqueue: 10-30 us a step) before the wall clock stands for the device time."""


@dataclass(frozen=True)
class Leg:
    """One timed leg: its figure a step and what stood behind it, and what the controller's clock saw around the call."""

    step_s: float  # the figure: the mean of the leg's windows (device time on a GPU, else the window's wall clock)
    figure: str  # "device", "wall", or why the wall clock stood for the device time
    controller_s: float  # the whole call on the controller's clock, less the round trip
    worker_s: float  # what the worker accounted for in the call: its windows, its inputs(seed) calls and the spins before windows
    window_s: list[float]  # each step's window on the worker's clock (step, outputs, digests)
    device_s: list[float]  # each step's window in device time (GPU)
    inputs_s: list[float]  # each step's inputs(seed), the device synchronized after it (outside the window)
    step_only_s: list[float]  # each step's step() alone, in the figure's clock (device time where the figure is)
    digests: list[dict[str, float]]  # each step's outputs' digests (window.py)
    tampered: list[str]
    seeds: list[int] | None
    saved_step: int | None = None  # which step's outputs were saved for the gate

    @property
    def inputs_step_s(self) -> float:
        return sum(self.inputs_s) / len(self.inputs_s) if self.inputs_s else 0.0

    @property
    def wall_step_s(self) -> float:
        return sum(self.window_s) / len(self.window_s) if self.window_s else 0.0


def draw_seeds(steps: int) -> list[int]:
    """One fresh seed per step, drawn now: after the candidate's code was built, so it cannot be known ahead."""
    return [secrets.randbits(SEED_BITS) for _ in range(steps)]


def keeps_every_step(references: dict[str, Any], steps: int) -> bool:
    """Whether a leg of `steps` steps keeps every step's outputs on the device for the gate to pick from (their frozen
    sizes within KEEP_BYTES), or only the last's: decided here, the same for both workers of a pair."""
    return sum(int(getattr(array, "nbytes", 0)) for array in references.values()) * steps <= KEEP_BYTES


def gated_step(steps: int) -> int:
    """Which step of a leg has its outputs copied and gated, drawn now: the worker learns it after its leg."""
    return secrets.randbelow(steps) if steps > 0 else 0


def leg(process: Any, steps: int, seeds: list[int] | None, folder: Path | None, other: Any = None, gated: int | None = None,
        keep_all: bool = True) -> Leg:
    """`steps` steps of `process` (one per seed when seeded) in timed windows, the call on this process's clock while
    `other` is stopped; the outputs of step `gated` (default the last; the last too where the leg kept only that one,
    `keep_all` False) saved in `folder` when given, after the clock stopped."""
    round_trip_s = process.round_trip_s()
    chosen = steps - 1 if gated is None or not keep_all else gated
    with stopped(other):
        began = perf_counter()
        reported: TimeStepsAnswer = process.time(steps, seeds=seeds, keep_all=keep_all)  # read with defaults: a stand-in may tell less
        elapsed_s = perf_counter() - began
        tampered = list(reported.get("tampered", []))
        if folder is not None:
            tampered += [name for name in process.save_timed(folder, chosen).get("tampered", []) if name not in tampered]
    windows = [float(w) for w in reported["wall_s"]]
    device = [float(d) for d in reported.get("device_s", [])]
    inputs = [float(i) for i in reported.get("inputs_s", [])]
    spun_s = sum(float(x) for x in reported.get("spin_s", []))  # the spin before each GPU window: the worker's, accounted, in no figure
    step_s, figure = figure_of(windows, device)
    alone = reported.get("step_device_s" if figure == "device" else "step_wall_s") or []
    return Leg(step_s=step_s, figure=figure, controller_s=max(elapsed_s - round_trip_s, 0.0), worker_s=sum(windows) + sum(inputs) + spun_s,
               window_s=windows, device_s=device, inputs_s=inputs, step_only_s=[float(x) for x in alone],
               digests=list(reported.get("digests", [])), tampered=tampered, seeds=seeds, saved_step=chosen if folder is not None else None)


def figure_of(windows_s: list[float], device_s: list[float]) -> tuple[float, str]:
    """A leg's figure a step and its source: the windows' device time where every window has one and the wall clock
    does not stand well above it (WALL_OVER, WALL_SLACK_S); the wall clock otherwise, with why."""
    steps = len(windows_s)
    if steps == 0:
        return 0.0, "wall"
    if len(device_s) != steps:
        return sum(windows_s) / steps, "wall"
    wall, device = sum(windows_s), sum(device_s)
    if wall > device * (1 + WALL_OVER) + WALL_SLACK_S * steps:
        return wall / steps, (f"the wall clock: its windows took {wall / steps * 1e3:.3g} ms a step on the worker's clock against "
                              f"{device / steps * 1e3:.3g} ms of device time on the step's stream (work off that stream, or on the host "
                              "after it)")
    return device / steps, "device"


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
