"""How many steps a timed leg holds (ab.py's legs, a campaign's pacing): enough of the model's time to average a short
step's jitter, few enough that a step of a second, or inputs drawn slowly on the host, do not make a leg last minutes.
The measurements behind the figures: docs/decisions.md, A timed leg on a GPU: 100 ms of device time.
"""

from __future__ import annotations

import math

LEG_MAX_S = 0.5
"""paced: a leg holds no more steps than fill this much of the model's time (a 1.2B decoder's eager generate of 1.17 s
a step runs one a leg: three spent 42 of a campaign's device-s on its A/A alone)."""
LEG_WALL_MAX_S = 2.5
"""paced: nor more than fill this much wall time with their inputs(seed) (a workload that draws its inputs on the host
can spend ten times its step there)."""
LEG_FILL_S = 0.025
"""paced: a leg holds at least this much of the model's own time on the worker's clock, so a 1 ms step's leg holds 25
steps: its figure a mean over many windows, not one start and stop's jitter."""
DEVICE_LEG_FILL_S = 0.1
"""paced, where the figure is device time: at least this much of it (do_bench's default rep of 100 ms): a window's
device time varies step to step with the GPU's clocks after the idle the inputs leave (docs/decisions.md: A timed
leg on a GPU: 100 ms of device time)."""
MAX_STEPS = 1000  # WorkloadBenchRequest.steps_per_leg's bound


def paced_steps(requested: int, step_s: float, inputs_s: float | None = None, device_timed: bool = False) -> int:
    """The steps a leg holds at a reference step of `step_s` (its figure) and `inputs_s` of inputs(seed) a step: at least
    `requested` and enough for LEG_FILL_S of the model's time (DEVICE_LEG_FILL_S where the figure is device time), at
    most what fills LEG_MAX_S of the model's time or LEG_WALL_MAX_S of wall time with the inputs (one at least), and
    MAX_STEPS. A leg's steps share one call's cost and average a short step's jitter; a step of a second has neither."""
    if step_s <= 0:
        return requested
    most = min(MAX_STEPS, max(1, min(math.ceil(LEG_MAX_S / step_s), math.ceil(LEG_WALL_MAX_S / (step_s + (inputs_s or 0.0))))))
    fill_s = DEVICE_LEG_FILL_S if device_timed else LEG_FILL_S
    return min(max(requested, math.ceil(fill_s / step_s)), most)


def leg_policy() -> str:
    """How paced_steps sizes a leg, in words (a campaign's note)."""
    return (f"a leg holds at least {LEG_FILL_S * 1e3:g} ms of the model's time ({DEVICE_LEG_FILL_S * 1e3:g} ms where it is device "
            f"time), at most {LEG_MAX_S:g} s of it or {LEG_WALL_MAX_S:g} s of wall time with its inputs")
