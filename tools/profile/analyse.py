"""The analysis every trace gets, whatever wrote it: groups, busy time, hotspots on the roof, fusion, findings."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from hyperloom.tools.profile.compiled import inductor_kernel, is_compiled_region
from hyperloom.tools.profile.fusion import Node, fusion_candidates
from hyperloom.tools.profile.group import Classifier, WorkItem, class_shares, device_busy, kernel_groups, shadowed_ops, work_items
from hyperloom.tools.profile.hotspots import rank_hotspots
from hyperloom.tools.profile.models import ClassShare, DeviceBusy, FusionCandidate, Hotspot, KernelGroup
from hyperloom.tools.profile.roof import Roofs
from hyperloom.tools.profile.trace import Trace
from hyperloom.tools.profile.work import WorkCache

LAUNCH_BOUND_BUSY_PERCENT = 50.0  # the GPU idles more than half the window ...
LAUNCH_BOUND_MEAN_US = 20.0  # ... between kernels shorter than this on average
UNLINKED_NOTE_PERCENT = 5.0


@dataclass
class Analysis:
    device_time_us: float
    kernels: list[KernelGroup]
    classes: list[ClassShare]
    devices: list[DeviceBusy]
    ranked: list[tuple[Hotspot, WorkItem]]
    fusion: list[FusionCandidate]
    fusion_runs: list[list[Node]]  # per candidate, the nodes of its first occurrence
    launch_bound: bool
    findings: list[str]

    @property
    def busy_percent(self) -> float | None:
        return self.devices[0].busy_percent if self.devices else None


def _compiled_finding(trace: Trace, total_us: float) -> list[str]:
    """What ran inside compiled code, how it was attributed and what stays unattributed."""
    inside = [k for k in trace.kernels if k.kind == "kernel" and k.op is not None and is_compiled_region(k.op.name)]
    if not inside or not total_us:
        return []
    regions = sorted({k.op.name for k in inside if k.op is not None})
    names = {k.name for k in inside}
    inductor = {n for n in names if inductor_kernel(n)}
    share = 100 * sum(k.dur_us for k in inside) / total_us
    return [f"{share:.0f} % of device time ran inside compiled code ({', '.join(regions[:3])}{', ...' if len(regions) > 3 else ''}), "
            f"where the trace records no op: its {len(names)} kernels are ranked each by name and launch shape "
            f"({len(inductor)} Inductor kernels, named by the ops they fused; {len(names) - len(inductor)} library kernels: GEMMs, "
            "attention, copies); none has input shapes, so none has a byte/flop model or a roof placement. For shapes, "
            "profile the same step without torch.compile (eager) beside this one"]


def analyse(trace: Trace, roofs: Roofs) -> Analysis:
    classify, work_of = Classifier(), WorkCache()
    total_us = sum(k.dur_us for k in trace.kernels)
    groups = kernel_groups(trace.kernels, classify, total_us)
    devices = [] if trace.cpu_only else device_busy(trace.kernels, trace.window_us, trace.device_names)
    items = work_items(trace.kernels, classify, work_of, shadowed_ops(trace.ops, work_of) if trace.cpu_only else None)
    ranked = rank_hotspots(items, roofs, total_us)
    found = fusion_candidates(trace, classify, work_of) if trace.ops else []
    fusion, fusion_runs = [c for c, _ in found], [run for _, run in found]
    findings: list[str] = []
    launch_bound = False
    if devices:
        busiest = devices[0]
        device_kernels = [k.dur_us for k in trace.kernels if k.kind == "kernel"]
        mean_us = statistics.fmean(device_kernels) if device_kernels else 0.0
        idle = 100 - busiest.busy_percent
        if busiest.busy_percent < LAUNCH_BOUND_BUSY_PERCENT and mean_us < LAUNCH_BOUND_MEAN_US:
            launch_bound = True
            findings.append(
                f"launch-bound: {busiest.device} idles {idle:.0f} % of the {trace.window_s * 1e3:.3g} ms window between "
                f"{len(device_kernels)} kernels of {mean_us:.3g} us on average; the host launches them slower than the GPU runs "
                "them. CUDA/HIP graphs or torch.compile(mode='reduce-overhead') remove the gaps; faster kernels alone will not help")
        elif busiest.busy_percent < LAUNCH_BOUND_BUSY_PERCENT:
            findings.append(f"{busiest.device} idles {idle:.0f} % of the window while its kernels are long ({mean_us:.3g} us on "
                            "average): the host side (data loading, Python, synchronisation) keeps it waiting")
        if len(devices) > 1:
            findings.append(f"{len(devices)} devices ran work; busy and idle figures are the busiest one's ({busiest.device})")
    if trace.tool == "rocprofv3":
        findings.append("rocprofv3 records no framework ops: kernels are grouped and ranked by name only, with no shapes, no "
                        "byte/flop model and no fusion candidates; profile the run with torch.profiler (workload=) for those")
    elif not trace.cpu_only:
        unlinked = sum(k.dur_us for k in trace.kernels if k.op is None and k.kind == "kernel")
        if total_us and 100 * unlinked / total_us > UNLINKED_NOTE_PERCENT:
            findings.append(f"{100 * unlinked / total_us:.0f} % of device time is in kernels no recorded op launched (a library's own "
                            "launches, or a CUDA graph's replay): those are ranked by kernel name, with no shapes")
        findings.extend(_compiled_finding(trace, total_us))
    above = [h for h, _ in ranked if h.percent_of_roof is not None and h.percent_of_roof > 100]
    if above:
        worst = max(above, key=lambda h: h.percent_of_roof)
        findings.append(f"{len(above)} hotspots run above their roof (up to {worst.percent_of_roof:.0f} % of {worst.roof}, #{worst.rank}): "
                        "that ceiling is below what this part reaches (a microbenchmark that misses the fastest path, or a datasheet "
                        "figure), so their percent of roof is not a gap; measure a higher ceiling before ranking them")
    if trace.ops and not any(op.dims for op in trace.ops):
        findings.append("the trace records no input shapes (captured with record_shapes=False): no byte/flop models and no "
                        "fusion candidates; profile again with record_shapes=True")
    return Analysis(total_us, groups, class_shares(trace.kernels, classify, total_us), devices, ranked, fusion, fusion_runs, launch_bound,
                    findings)
