"""The worker side of profile: runs the user's workload under torch.profiler (this module runs in the worker process).

Called by hyperloom.core.worker as `capture(payload)`. One step is one run of the script, or one call of the
step function; the first `warmup_steps` steps run under the profiler's warm-up (not recorded), the next
`steps` are recorded with shapes, on the CPU and, when torch sees a GPU, on it too (CUDA activity, which
is HIP on ROCm builds of torch). The trace is exported as Chrome JSON; torch.profiler's own key_averages
totals go beside it, so the caller can check its kernel sum against the profiler's.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hyperloom.tools.profile.copy_rate import device_copy
from hyperloom.tools.profile.names import repaired


class ProfilerUnavailable(RuntimeError):
    """torch (with torch.profiler) cannot be imported in the worker's Python."""


def _step_function(payload: dict[str, Any]) -> Callable[[], object]:
    workload, args = payload["workload"], payload["args"]
    if payload["kind"] == "script":
        sys.argv = [workload, *args]
        sys.path.insert(0, str(Path(workload).parent))

        def run_script() -> None:
            try:
                runpy.run_path(workload, run_name="__main__")
            except SystemExit as exc:  # a script that ends with sys.exit(0) finished its step
                if exc.code not in (None, 0):
                    raise
        return run_script
    where, _, function_name = workload.rpartition(":")
    sys.argv = [where, *args]
    sys.path.insert(0, payload["root"])
    from hyperloom.core.factory import declared_knobs, knob_values, load_file

    # file.py:function loads as workload freeze's runner loads it (the file's stem its module's name, so a module
    # forward it names is what an overrides module replaces there); module:function imports from the workspace root
    module = load_file(where, Path(where).stem) if payload["kind"] == "file_function" else importlib.import_module(where)
    function = getattr(module, function_name)
    made = function(**knob_values(declared_knobs(function), payload.get("knobs") or {}))  # set-up call, outside the profiler
    step = getattr(made, "step", None)  # a workload factory's object (workload freeze's contract): its step()
    return step if callable(step) else made if callable(made) else function


def _device_rows(prof: Any, gpu: bool) -> list[dict[str, Any]]:
    """key_averages rows of device activities (kernels, copies, sets), with their self device time."""
    if not gpu:
        return []
    rows = []
    for event in prof.key_averages():
        self_us = getattr(event, "self_device_time_total", None)
        if self_us is None:
            self_us = getattr(event, "self_cuda_time_total", 0.0)
        if "CPU" in str(getattr(event, "device_type", "CPU")) or getattr(event, "is_user_annotation", False) or not self_us:
            continue  # as key_averages' own table totals: device events, user annotations on the GPU timeline left out
        rows.append({"name": event.key, "count": int(event.count), "self_device_time_us": float(self_us)})
    rows.sort(key=lambda r: r["self_device_time_us"], reverse=True)
    return rows


def export_json(prof: Any, trace: str, checked: bool = True) -> None:
    """The chrome trace, as JSON: a trace that does not parse has its name lines re-escaped (names.py). Unchecked, it
    is written as torch writes it, for a reader that repairs it itself (load.read_trace): the check decodes the whole
    trace once more, as much as its reader will (proof of work's profile, written and read once)."""
    prof.export_chrome_trace(trace)
    if not checked:
        return
    text = Path(trace).read_text(encoding="utf-8", errors="replace")
    try:
        json.loads(text)
    except json.JSONDecodeError:
        Path(trace).write_text(repaired(text), encoding="utf-8")


def capture(payload: dict[str, Any]) -> dict[str, Any]:
    try:
        import torch
    except ImportError as exc:
        raise ProfilerUnavailable(f"torch cannot be imported ({exc})") from exc
    os.chdir(payload["root"])
    step = _step_function(payload)
    gpu = bool(torch.cuda.is_available())
    synchronize: Callable[[], None] = torch.cuda.synchronize if gpu else (lambda: None)

    def timed_step() -> float:
        started = time.perf_counter()
        step()
        synchronize()
        return time.perf_counter() - started

    return record(timed_step, int(payload["warmup_steps"]), int(payload["steps"]),
                  payload["trace"] if payload.get("profile", True) else None, payload["key_averages"], gpu)


def record(timed_step: Callable[[], float], warmup: int, active: int, trace: str | None, key_averages: str, gpu: bool) -> dict[str, Any]:
    """`warmup` then `active` steps (each returns its wall seconds), the active ones recorded by torch.profiler into the
    Chrome trace `trace` with shapes and Python stacks (no profiler when `trace` is None), and key_averages' device
    rows into `key_averages`: the report capture_workload reads. The workload runner's `trace` entry calls it too,
    on a workload built with its levers in place."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    walls: list[float] = []
    rows: list[dict[str, Any]] = []
    if trace is not None:
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        # with_stack: the module forward each op ran in (stack.py), what integrate replaces
        with profile(activities=activities, record_shapes=True, with_stack=True,
                     schedule=schedule(wait=0, warmup=warmup, active=active, repeat=1),
                     on_trace_ready=lambda p: export_json(p, trace)) as prof:
            for _ in range(warmup + active):
                walls.append(timed_step())
                prof.step()
        rows = _device_rows(prof, gpu)
        Path(key_averages).write_text(json.dumps(rows, indent=1))
    else:
        walls = [timed_step() for _ in range(warmup + active)]
    copy = device_copy(torch) if gpu and trace is not None else {}  # the bandwidth a replay's roof is read at (copy_rate.py)
    return {**copy,
        "torch": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None), "gpu": gpu,
        "device": torch.cuda.get_device_name(0) if gpu else None, "step_wall_s": walls[warmup:], "warmup_wall_s": walls[:warmup],
        "profiler_device_time_s": sum(r["self_device_time_us"] for r in rows) / 1e6 if rows else None,
    }
