"""The work of one profiled step (runner.engagement's trace, shapes recorded): by op class (gemm, attention, other) the
ops that ran, their flops and bytes from the recorded shapes (tools/profile/work.py), and their time (device kernel
time on a GPU, operator self time on a CPU), with the model's parameter bytes. Read on the controller's side."""

from __future__ import annotations

from pathlib import Path

from hyperloom.tools.profile.group import Classifier, work_items, shadowed_ops
from hyperloom.tools.profile.hotspots import item_dtype
from hyperloom.tools.profile.load import read_trace
from hyperloom.tools.profile.parse_chrome import EmptyTrace
from hyperloom.tools.profile.trace import Trace
from hyperloom.tools.profile.work import WorkCache
from hyperloom.tools.workload.models import ClassWork, StepWork

CLASSES = ("gemm", "attention")  # the rest is "other"


def step_work(trace: Path, parameter_bytes: int | None) -> StepWork:
    """The work in the Chrome trace at `trace`; a trace with nothing in it (a step that ran no op) is no work."""
    try:
        parsed = read_trace(trace, trace.name)
    except EmptyTrace:
        return StepWork(classes={c: ClassWork() for c in (*CLASSES, "other")}, parameter_bytes=parameter_bytes, device_timed=False)
    return work_of(parsed, parameter_bytes)


def work_of(trace: Trace, parameter_bytes: int | None) -> StepWork:
    """By class: each op (or unlinked kernel) counted once, an op whose work a same-class op it calls already counts
    (aten::linear calling aten::addmm, on a CPU) left out of the counts, flops and bytes."""
    work_cache = WorkCache()
    shadowed = shadowed_ops(trace.ops, work_cache) if trace.cpu_only else {}
    classes = {c: ClassWork() for c in (*CLASSES, "other")}
    by_dtype: dict[str, int] = {}
    for item in work_items(trace.kernels, Classifier(), work_cache, shadowed):
        name = item.kernel_class if item.kernel_class in CLASSES else "other"
        into = classes[name]
        into.time_s += item.total_us / 1e6
        if item.op is not None and id(item.op) in shadowed:
            continue
        calls = len(item.calls)
        into.ops += calls
        if item.work is not None:
            into.flops += item.work.flops * calls
            into.bytes_moved += item.work.bytes_moved * calls
            if name in CLASSES and item.work.flops:
                dtype = item_dtype(item) or "unknown"
                by_dtype[dtype] = by_dtype.get(dtype, 0) + item.work.flops * calls
    return StepWork(classes=classes, compute_flops_by_dtype=by_dtype, parameter_bytes=parameter_bytes, device_timed=not trace.cpu_only)


def describe(work: StepWork) -> str:
    """'gemm 6 ops 201 MFLOP 3.1 ms, attention 0 ops, other 40 ops 1.2 ms; parameters 2.1 MB' for a report."""
    unit = "device" if work.device_timed else "host self"
    parts = [f"{name} {w.ops} ops {w.flops / 1e6:.4g} MFLOP {w.time_s * 1e3:.3g} ms" for name, w in work.classes.items()]
    params = f"; parameters {work.parameter_bytes / 1e6:.4g} MB" if work.parameter_bytes is not None else ""
    return ", ".join(parts) + f" ({unit} time){params}"
