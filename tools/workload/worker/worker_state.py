"""The state of a workload worker (tools/workload/worker/runner.py): the built workload and its levers (STATE), and what the
timed path checks against (GUARD). One per worker process; the runner's entries and the build (worker_build.py) share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hyperloom.tools.workload.worker import tamper


@dataclass
class _State:
    obj: Any = None
    step: Callable[[], Any] | None = None
    outputs: Callable[[], Any] | None = None
    levers: list[dict[str, str]] = field(default_factory=list)
    graph: Any = None
    gpu: bool = False
    folder: str = ""
    module_file: str | None = None
    warm: bool = False  # warm-up done: a stance that needs compiled graphs (skip_guard_eval) applies from here
    channels_last: int | None = None  # the channels_last lever: the model's 4-D parameters it put in that format
    fused: dict[str, dict[str, int]] | None = None  # the fuse_projections lever: groups fused and left apart (fused_projections.Placement)
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)  # the kernel levers: what each routed (kernel_route.py), by lever value
    quantized: dict[str, int] | None = None  # a weight-only lever: layers quantized, their weights' bytes before and after
    kept: Any = None  # the workload as built, when kept for `serve` (the candidate runs on a copy)
    not_kept: str = ""  # why it could not be kept
    # the last leg's steps' outputs kept on their device, by step (save_timed)
    leg_outputs: dict[int, dict[str, Any]] = field(default_factory=dict)
    # (object, attribute, value) a setting lever replaced: restored before the next candidate is served
    settings_before: list[tuple[Any, str, Any]] = field(default_factory=list)


STATE = _State()


@dataclass
class _Guard:
    """What the timed path checks against: its functions before the candidate's code ran, the workload's methods as
    bound at build, and the workload's inputs(seed) (None: its inputs are fixed)."""

    path: tamper.Snapshot = field(default_factory=dict)
    methods: tamper.Snapshot = field(default_factory=dict)
    inputs: Callable[[int], Any] | None = None


GUARD = _Guard()
