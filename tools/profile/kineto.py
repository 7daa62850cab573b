"""A Trace straight from torch.profiler's raw (kineto) events, without the Chrome JSON: writing, decoding and reading
that file was most of proof of work's cost (docs/decisions.md: What a proof-of-work profile costs).
Each operator keeps what the JSON would have given it (name, times, thread, shapes, dtypes, concrete inputs as text),
each kernel its launching operator, so work.py weighs it the same (tests/test_profile_kineto.py).

On a GPU, each device event (a kernel, a copy, a set) names the operator that launched it by that operator's
correlation id (`linked_correlation_id`, as torch's own _parse_kineto_results links them; the Chrome JSON's "External
id"), and carries the runtime call's correlation (a CUDA graph's replayed kernels: the graph launch's). Read off torch
2.11's events (lab/raw-profiler-events/kineto_fields.py; docs/decisions.md: What a proof-of-work profile costs).
What the raw events lack beside the JSON: a kernel's grid and block and a copy's bytes (so copies weigh no bytes
here), and the devices' names.

torch 2.11's events have no `activity_type`: an event on the host is then told apart
by its fields: a runtime or driver call links to the operator it ran inside, or is named as one (cudaDeviceSynchronize
outside any operator); the profiler's own overhead has no device index. A torch whose events lack a field every path
reads returns None: the JSON is the fallback.
"""

from __future__ import annotations

import re
from typing import Any

from hyperloom.tools.profile.parse_chrome import GRAPH_LAUNCH, link_kernels, to_cpu_only, window_of
from hyperloom.tools.profile.trace import Kernel, Op, Trace

# Every field of a raw event read below for every event; a torch whose events lack one gets the JSON path.
EVENT_FIELDS = ("device_type", "device_index", "device_resource_id", "start_ns", "duration_ns", "name", "start_thread_id", "correlation_id",
                "linked_correlation_id", "shapes", "dtypes", "concrete_inputs")
# a host event's kind that is a runtime or driver call: torch's activity types, and _host_kind's "runtime" without them
RUNTIME_KINDS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver", "privateuse1_runtime", "privateuse1_driver",
                           "runtime"})
RUNTIME_CALL = re.compile(r"(cuda|cu|hip|hsa)[A-Z_]")  # cudaLaunchKernel, cuLaunchKernelEx, hipMemcpyAsync, hsa_signal_wait...
COPY_KINDS = (("Memcpy", "memcpy"), ("Memset", "memset"))  # a device event's kind by its name's start; else a kernel


def raw_events(prof: Any) -> list[Any] | None:
    """A finished torch.profiler session's raw events, or None where it has none. Each call builds them anew (10-15 ms
    for a small decoder's 8,102 on a CPU): read them once and pass them on."""
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    return results.events() if results is not None else None


def trace_of(prof: Any, events: list[Any] | None = None) -> Trace | None:
    """The Trace of a finished torch.profiler session: its operators and, on a GPU, its kernels linked to them; None
    with no raw events, events without a field read here (an older torch), or no operator and no kernel at all.
    `events`: the session's raw_events when the caller already has them."""
    if events is None:
        events = raw_events(prof)
    if not events or not all(hasattr(events[0], field) for field in EVENT_FIELDS):
        return None
    sample = events[0]
    typed, annotated, python = (hasattr(sample, name) for name in ("activity_type", "is_user_annotation", "is_python_function"))
    cpu = type(sample.device_type()).CPU  # torch's DeviceType enum, compared without a str a call
    ops: list[Op] = []
    kernels: list[Kernel] = []
    steps: list[tuple[float, float]] = []
    graphs: list[tuple[float, int]] = []
    for event in events:
        name = event.name()
        start_us, dur_us = event.start_ns() / 1e3, event.duration_ns() / 1e3
        annotation = event.is_user_annotation() if annotated else name.startswith("ProfilerStep#")
        if event.device_type() != cpu:
            if not annotation:  # a record_function range on the device's timeline is no kernel
                kernels.append(Kernel(name, start_us, dur_us, str(event.device_index()), str(event.device_resource_id()),
                                      _device_kind(name), event.correlation_id(), event.linked_correlation_id() or None))
            continue
        if annotation:
            if name.startswith("ProfilerStep#"):
                steps.append((start_us, start_us + dur_us))
            continue
        kind = event.activity_type() if typed else _host_kind(event, name)
        if kind in RUNTIME_KINDS:
            if name.endswith(GRAPH_LAUNCH):
                graphs.append((start_us, event.correlation_id()))
            continue
        if kind != "cpu_op" or (python and event.is_python_function()):
            continue
        ops.append(Op(name, start_us, dur_us, event.start_thread_id(), event.correlation_id(),
                      event.shapes(), event.dtypes(), [_concrete(v) for v in event.concrete_inputs()]))
    if not ops and not kernels:
        return None
    link_kernels(kernels, ops, {})
    trace = Trace("torch.profiler", kernels, ops, window_of(steps, kernels, ops), graph_launches=[c for _, c in sorted(graphs) if c])
    if not kernels:
        to_cpu_only(trace)
    return trace


def _host_kind(event: Any, name: str) -> str:
    """An event on the host, without torch's activity_type: "runtime" (a runtime or driver call: it links to the
    operator it ran inside, or is named as one), "overhead" (the profiler's own: no device index), else "cpu_op"."""
    if event.linked_correlation_id() or RUNTIME_CALL.match(name):
        return "runtime"
    return "overhead" if event.device_index() < 0 else "cpu_op"


def _device_kind(name: str) -> str:
    return next((kind for prefix, kind in COPY_KINDS if name.startswith(prefix)), "kernel")


def _concrete(value: object) -> str:
    """A concrete input as the Chrome export writes it: "" for a tensor (None here), else its text."""
    return "" if value is None else str(value)
