"""A Trace straight from torch.profiler's raw (kineto) events, without the Chrome JSON: writing, decoding and reading
that file was most of proof of work's cost for an eager `generate` (on a CPU: the gate 41.7 % of a trial traced, 10.5 %
counted; bench/workload_gate_cost.py). Each operator keeps what the JSON would have given it (name, times, thread,
shapes, dtypes, concrete inputs as text), so work.py weighs it the same (tests/test_profile_kineto.py).

An older torch whose raw events lack a field read here (torch 2.11's have no `activity_type`: MEASURED on the H200's
image, where the read raised inside every profiled step) returns None as well: the JSON path is the fallback.

CPU-only steps only: on a GPU a kernel's link to the operator that launched it (the JSON's "External id") has not been
read off the raw events on a device yet (scripts/device/kineto_fields.py), so a step with device activity returns
None and its caller writes the JSON as before.
"""

from __future__ import annotations

from typing import Any

from hyperloom.tools.profile.parse_chrome import to_cpu_only, window_of
from hyperloom.tools.profile.trace import Op, Trace


# Every field of a raw event read below; a torch whose events lack one gets the JSON path.
EVENT_FIELDS = ("device_type", "start_ns", "duration_ns", "is_user_annotation", "name", "activity_type",
                "is_python_function", "start_thread_id", "correlation_id", "shapes", "dtypes", "concrete_inputs")


def raw_events(prof: Any) -> list[Any] | None:
    """A finished torch.profiler session's raw events, or None where it has none. Each call builds them anew (10-15 ms
    for a small decoder's 8,102 on a CPU): read them once and pass them on."""
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    return results.events() if results is not None else None


def trace_of(prof: Any, events: list[Any] | None = None) -> Trace | None:
    """The Trace of a finished torch.profiler session's CPU operators, or None: no raw events, events without a field
    read here (an older torch), device activity in the step (the JSON then), or no operator at all. `events`: the
    session's raw_events when the caller already has them."""
    if events is None:
        events = raw_events(prof)
    if events is None:
        return None
    if events and not all(hasattr(events[0], field) for field in EVENT_FIELDS):
        return None
    cpu = type(events[0].device_type()).CPU if events else None  # torch's DeviceType enum, compared without a str a call
    ops: list[Op] = []
    steps: list[tuple[float, float]] = []
    for event in events:
        if event.device_type() != cpu:
            return None
        start_us, dur_us = event.start_ns() / 1e3, event.duration_ns() / 1e3
        if event.is_user_annotation():
            if event.name().startswith("ProfilerStep#"):
                steps.append((start_us, start_us + dur_us))
            continue
        if event.activity_type() != "cpu_op" or event.is_python_function():
            continue
        ops.append(Op(event.name(), start_us, dur_us, event.start_thread_id(), event.correlation_id(),
                      event.shapes(), event.dtypes(), [_concrete(v) for v in event.concrete_inputs()]))
    if not ops:
        return None
    trace = Trace("torch.profiler", [], ops, window_of(steps, [], ops))
    to_cpu_only(trace)
    return trace


def _concrete(value: object) -> str:
    """A concrete input as the Chrome export writes it: "" for a tensor (None here), else its text."""
    return "" if value is None else str(value)
