"""What a timed step is made of, measured at freeze on the baseline: step() and outputs() inside the timed window,
inputs(seed) and the host copy of the gated step's outputs outside it. A user whose inputs(seed) draws on the host, or
whose outputs() copies to the host, learns it here, with what to do, before a campaign spends its time on it."""

from __future__ import annotations

import statistics
from pathlib import Path
from time import perf_counter
from typing import Any

from hyperloom.tools.workload.models import StepCosts
from hyperloom.tools.workload.timed import draw_seeds, leg

STEPS = 5
SHARE = 0.1
"""inputs(seed) or outputs() costing more than this share of the step is said."""


def measured_costs(process: Any, folder: Path) -> StepCosts:
    """`process`'s step, outputs() and inputs(seed) over one leg of STEPS timed windows (the medians: one step that
    loads a kernel does not speak for the rest), and the host copy of one step's outputs on this process's clock."""
    seeded = bool(process.info["has_inputs"])
    gated = bool(process.info["has_outputs"])
    timed = leg(process, STEPS, draw_seeds(STEPS) if seeded else None, None)
    host_copy_s = None
    if gated:
        began = perf_counter()
        process.save_timed(folder)
        host_copy_s = perf_counter() - began
    windows = timed.device_s if timed.figure == "device" else timed.window_s
    alone = timed.step_only_s or windows
    costs = StepCosts(figure="device" if timed.figure == "device" else "wall", step_s=statistics.median(alone),
                      outputs_s=max(statistics.median(w - s for w, s in zip(windows, alone, strict=True)), 0.0),
                      inputs_s=statistics.median(timed.inputs_s) if seeded and timed.inputs_s else None, host_copy_s=host_copy_s)
    return costs.model_copy(update={"notes": notes(costs, process.info["vendor"] != "cpu")})


def notes(costs: StepCosts, gpu: bool) -> list[str]:
    """What a user can do about a large share of the harness's work, said with the figures."""
    said = []
    step = f"the step {costs.step_s * 1e3:.3g} ms"
    if costs.inputs_s is not None and costs.inputs_s > SHARE * costs.step_s:
        where = ("draw them on the device (torch.randn(..., device=..., generator=a device Generator)), or fill a tensor made once"
                 if gpu else "make them cheaper to draw (fewer random numbers, a tensor filled in place)")
        said.append(f"inputs(seed) takes {costs.inputs_s * 1e3:.3g} ms, {step}: it runs outside the timed window, so it does not count in "
                    f"the step, but every timed step pays it in wall time (longer legs, fewer candidates an hour): {where}")
    if costs.outputs_s > SHARE * costs.step_s:
        said.append(f"outputs() takes {costs.outputs_s * 1e3:.3g} ms, {step}: it is timed with the step (work moved there counts): return "
                    "the step's tensors as they are, with no host copy (.cpu(), .numpy(), .tolist()) or conversion: Hyperloom copies the "
                    "gated step's outputs to the host itself, untimed")
    return said
