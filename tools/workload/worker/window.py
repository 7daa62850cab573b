"""Worker side: one timed step's window, as triton.testing.do_bench times a call. The device is synchronized before it
opens; events on the step's stream mark step(), then outputs() and a digest of each output; the device is
synchronized before it closes. What the harness adds stays outside: the inputs are drawn before it (their own time
measured by the caller), and the outputs' host copy is made after it, for the one step the controller gates.

On a GPU a short spin of matrix work (spin) runs before each window opens, outside it: a step after the idle a
host-side inputs(seed) leaves (90 ms for a ResNet's images) otherwise starts on a GPU that has dropped its clocks
(results/h100/verdict/). The caller runs it with the inputs, where its time and what it runs are measured.

The digest (an output's L2 norm for floats, its sum for integers) is computed on the outputs' device inside the
window: each step's outputs must exist when the window closes, and the controller compares every step's digest with
the reference's of the same inputs (digest.py), so a step whose outputs nobody copies cannot skip its work.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

@dataclass
class Window:
    """One step's window: the worker's clock around it (step() alone, and the whole), device time on the step's stream
    (GPU), each output's digest, and the outputs as returned (device tensors, not copied)."""

    wall_s: float
    step_wall_s: float
    device_s: float | None = None
    step_device_s: float | None = None
    digests: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


SPIN_S = 5e-3
"""The spin before a GPU window: enough matrix work to bring an idle GPU's clocks back up."""


def timed_window(run_step: Callable[[], Any], outputs: Callable[[], dict[str, Any]] | None, torch: Any, gpu: bool) -> Window:
    """`run_step` and `outputs` (named outputs, or None: nothing to gate) in one window: synchronized before and after,
    with three events on the current stream on a GPU (start, after the step, after the outputs and their digests)."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if gpu else None
    if gpu:
        torch.cuda.synchronize()
    began = perf_counter()
    if events is not None:
        events[0].record()
    run_step()
    if events is not None:
        events[1].record()
    stepped = perf_counter()
    named = outputs() if outputs is not None else {}
    sums = {name: _digest(torch, value) for name, value in named.items()}
    if events is not None:
        events[2].record()
        torch.cuda.synchronize()
    ended = perf_counter()
    window = Window(wall_s=ended - began, step_wall_s=stepped - began, outputs=named)
    if events is not None:
        window.device_s = events[0].elapsed_time(events[2]) / 1e3
        window.step_device_s = events[0].elapsed_time(events[1]) / 1e3
    window.digests = {name: float(value.item()) if hasattr(value, "item") else float(value) for name, value in sums.items()}
    return window


_SQUARE: dict[str, Any] = {}  # the spin's operand and how many products make SPIN_S, measured on first use


def spin(torch: Any) -> None:
    """About SPIN_S of matrix products on the current GPU, enqueued (the caller synchronizes): an idle GPU's clocks back up."""
    if "operand" not in _SQUARE:
        operand = torch.ones(2048, 2048, device="cuda", dtype=torch.float16)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.mm(operand, operand)  # the first product loads its kernel
        start.record()
        for _ in range(8):
            torch.mm(operand, operand)
        end.record()
        end.synchronize()
        _SQUARE.update(operand=operand, count=max(1, round(SPIN_S / max(start.elapsed_time(end) / 1e3 / 8, 1e-7))))
    for _ in range(_SQUARE["count"]):
        torch.mm(_SQUARE["operand"], _SQUARE["operand"])


def kept(named: dict[str, Any]) -> dict[str, Any]:
    """A copy of a step's outputs the next step cannot overwrite (a static buffer, a replayed graph's output), made on
    their device after the window closed."""
    return {name: value.detach().clone() if hasattr(value, "detach") else copy.deepcopy(value) for name, value in named.items()}


def _digest(torch: Any, value: Any) -> Any:
    """An output's digest where it lives: a float tensor's L2 norm (accumulated in float32, float64 for float64), an
    integer or bool tensor's sum (int64); a host value's in float64 with numpy. 0-d, read after the window."""
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype.is_complex:
            return math.nan  # refused where its host copy is made, with its name
        if value.dtype.is_floating_point:
            wide = torch.float64 if value.dtype == torch.float64 else torch.float32
            return torch.linalg.vector_norm(value, dtype=wide) if value.numel() else torch.zeros((), device=value.device)
        return value.sum(dtype=torch.int64) if value.numel() else torch.zeros((), dtype=torch.int64, device=value.device)
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return float(np.linalg.norm(array.astype(np.float64).ravel())) if array.size else 0.0
    if array.dtype.kind in "iub":
        return float(array.astype(np.int64).sum()) if array.size else 0.0
    return math.nan  # not a number: gated as the host copy reads it (refused there with its name)
