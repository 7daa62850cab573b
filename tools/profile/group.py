"""Kernels grouped by name, time by class, device busy time, and the work items hotspots are ranked from."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from hyperloom.tools.profile.classify import kernel_class, op_class
from hyperloom.tools.profile.compiled import is_compiled_region, region_label, region_note
from hyperloom.tools.profile.models import ClassShare, DeviceBusy, KernelClass, KernelGroup
from hyperloom.tools.profile.tensors import label
from hyperloom.tools.profile.trace import Kernel, Op
from hyperloom.tools.profile.work import Work, WorkCache


class Classifier:
    """kernel_class, remembered per (name, kind, op): a trace repeats the same few hundred combinations."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str | None], KernelClass] = {}

    def __call__(self, k: Kernel) -> KernelClass:
        key = (k.name, k.kind, k.op.name if k.op is not None else None)
        cls = self._seen.get(key)
        if cls is None:
            cls = self._seen[key] = kernel_class(*key)
        return cls


def kernel_groups(kernels: list[Kernel], classify: Classifier, total_us: float) -> list[KernelGroup]:
    """One row per kernel name, most time first."""
    rows: dict[str, list[Kernel]] = defaultdict(list)
    for k in kernels:
        rows[k.name].append(k)
    groups = []
    for name, members in rows.items():
        durations = [k.dur_us for k in members]
        total = sum(durations)
        launches = Counter(k.launch for k in members if k.launch)
        op_time: Counter[str] = Counter()
        for k in members:
            if k.op is not None:
                op_time[k.op.name] += k.dur_us
        groups.append(KernelGroup(
            name=name, kernel_class=classify(members[0]), count=len(members), total_s=total / 1e6,
            percent_of_device_time=100 * total / total_us if total_us else 0.0, mean_s=total / len(members) / 1e6,
            min_s=min(durations) / 1e6, max_s=max(durations) / 1e6,
            launch_shapes=[f"{shape} x{count}" for shape, count in launches.most_common(3)],
            ops=[name for name, _ in op_time.most_common(3)],
        ))
    groups.sort(key=lambda g: g.total_s, reverse=True)
    return groups


def class_shares(kernels: list[Kernel], classify: Classifier, total_us: float) -> list[ClassShare]:
    time: Counter[KernelClass] = Counter()
    count: Counter[KernelClass] = Counter()
    for k in kernels:
        cls = classify(k)
        time[cls] += k.dur_us
        count[cls] += 1
    return [ClassShare(kernel_class=c, count=count[c], total_s=t / 1e6, percent_of_device_time=100 * t / total_us if total_us else 0.0)
            for c, t in time.most_common()]


def device_busy(kernels: list[Kernel], window_us: tuple[float, float], names: dict[str, str]) -> list[DeviceBusy]:
    """Per device: summed activity time, and the time anything ran (overlapping streams merged)."""
    by_device: dict[str, list[Kernel]] = defaultdict(list)
    for k in kernels:
        by_device[k.device].append(k)
    window = max(window_us[1] - window_us[0], 1e-9)
    rows = []
    for device, members in by_device.items():
        busy, end = 0.0, float("-inf")
        for k in sorted(members, key=lambda k: k.start_us):
            start, stop = max(k.start_us, end), k.end_us
            if stop > start:
                busy += stop - start
            end = max(end, stop)
        rows.append(DeviceBusy(device=names.get(device, f"device {device}") if names.get(device) else f"device {device}",
                               kernel_time_s=sum(k.dur_us for k in members) / 1e6, busy_s=busy / 1e6, busy_percent=100 * busy / window))
    rows.sort(key=lambda r: r.busy_s, reverse=True)
    return rows


@dataclass
class WorkItem:
    """What a hotspot ranks: one op at one set of shapes (all its calls and their kernels), one unlinked kernel, or one
    kernel at one launch shape inside compiled code (compiled.py)."""

    label: str
    kernel_class: KernelClass
    op: Op | None
    work: Work | None
    total_us: float = 0.0
    calls: set[int] = field(default_factory=set)
    kernels: Counter[str] = field(default_factory=Counter)
    copy_bytes: int | None = 0  # copies and sets: bytes from the trace, summed (None once one is missing)
    model_note: str = ""


def is_device_copy(name: str) -> bool:
    return "DtoD" in name or "DEVICE_TO_DEVICE" in name or "Memset" in name


def shadowed_ops(ops: list[Op], work_of: WorkCache) -> dict[int, str]:
    """CPU-only traces: ops whose work a same-class op they call already counts (aten::linear calls aten::addmm,
    layer_norm calls native_layer_norm), by id, with the name of that op. Their own self time is dispatch overhead."""
    out: dict[int, str] = {}
    for op in ops:
        if op.parent is None or work_of(op) is None:
            continue
        cls, parent = op_class(op.name), op.parent
        while parent is not None:
            if op_class(parent.name) == cls:
                out.setdefault(id(parent), op.name)
            parent = parent.parent
    return out


def work_items(kernels: list[Kernel], classify: Classifier, work_of: WorkCache, shadowed: dict[int, str] | None = None) -> list[WorkItem]:
    items: dict[tuple, WorkItem] = {}
    shadowed = shadowed or {}
    op_keys: dict[int, tuple] = {}
    for k in kernels:
        region = k.op.name if k.op is not None and is_compiled_region(k.op.name) else None
        if k.kind != "kernel" or k.op is None or region:
            key: tuple = ("activity", k.name, region, k.launch if region else None)
            item = items.get(key)
            if item is None:
                note = region_note(k.name, region) if region else \
                    "no framework op is linked to this kernel: no shapes, no model" if k.kind == "kernel" else ""
                item = items[key] = WorkItem(region_label(k.name, k.launch) if region else k.name, classify(k), None, None,
                                             model_note=note)
            item.calls.add(id(k))
            if k.kind != "kernel":
                item.copy_bytes = None if item.copy_bytes is None or k.bytes is None else item.copy_bytes + k.bytes
        else:
            key = op_keys.get(id(k.op))
            if key is None:
                key = op_keys[id(k.op)] = (k.op.name, repr(k.op.dims), repr(k.op.types))
            item = items.get(key)
            if item is None:
                inner = shadowed.get(id(k.op))
                work = None if inner else work_of(k.op)
                cls = op_class(k.op.name)
                note = f"its work is counted in {inner}, which it calls; this is its own dispatch time" if inner else \
                    "" if work else f"no byte/flop model for {k.op.name} at these arguments"
                item = items[key] = WorkItem(label(k.op), cls if cls != "other" else classify(k), k.op, work, model_note=note)
            item.calls.add(id(k.op))
        item.total_us += k.dur_us
        item.kernels[k.name] += k.dur_us
    for item in items.values():
        if item.op is None and item.copy_bytes and item.kernel_class == "memory copy" and item.work is None:
            per_call = item.copy_bytes // max(len(item.calls), 1)
            if is_device_copy(item.label):
                factor = 1 if "Memset" in item.label else 2
                item.work = Work(factor * per_call, 0, None, f"bytes from the trace{' x2 (read and written)' if factor == 2 else ''}")
            else:
                item.work = Work(per_call, 0, None, "bytes from the trace")
    return list(items.values())
