"""Where a replayed step's time goes, replay by replay: a decode loop launches one CUDA/HIP graph per token, so a
token's time is the period from one replay's first kernel to the next one's, and it splits into the graph's own
kernels (by class and by kernel), the gaps between them inside the graph, and what runs between two replays (kernels
and copies launched outside the graph: sampling, stopping criteria, the host's bookkeeping, and the device idle while
the host works). Against a bytes roof for one token (the weights and the cache read once, at a bandwidth), it says
how far the token is from that roof and which part holds the distance (docs/decisions.md: The decode levers).

Read from the trace alone: CUPTI and roctracer give each kernel of a replayed graph the correlation id of its graph
launch (Trace.graph_launches). The replays counted are those of the graph launched most often (a decode's token
graph, not a prefill's one-off capture).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from hyperloom.tools.profile.classify import kernel_class, short_name
from hyperloom.tools.profile.models import ReplayAttribution, ReplayKernel, ReplayRoof
from hyperloom.tools.profile.trace import Kernel, Trace

MIN_REPLAYS = 2  # a period needs two replays
TOP_KERNELS = 12


def attribute_replays(trace: Trace, roof: ReplayRoof | None = None, kernel_bytes: dict[str, int] | None = None) -> ReplayAttribution | None:
    """The per-replay attribution of `trace`'s most launched graph, or None when it replays fewer than MIN_REPLAYS
    times (no graph, or one capture). `roof`: the bytes one replay must move and the bandwidth they move at.
    `kernel_bytes`: a kernel's bytes read in one replay, by its short name, where its route counted them."""
    replays = _replays(trace)
    if len(replays) < MIN_REPLAYS:
        return None
    starts = [r[0].start_us for r in replays]
    periods = [b - a for a, b in zip(starts, starts[1:])]
    inside = {id(k) for r in replays for k in r}
    between = [[k for k in trace.kernels if id(k) not in inside and a <= k.start_us < b] for a, b in zip(starts, starts[1:])]
    count = len(replays)
    busy = [_busy_us(r) for r in replays]
    spans = [r[-1].end_us - r[0].start_us for r in replays]
    period_us = statistics.median(periods)
    graph_us = statistics.median(busy)
    gaps_us = statistics.median(s - b for s, b in zip(spans, busy))
    outside_us = statistics.median(_busy_us(k) if k else 0.0 for k in between)
    idle_us = max(period_us - graph_us - gaps_us - outside_us, 0.0)
    classes: dict[str, float] = defaultdict(float)
    kernels: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for replay in replays:
        for k in replay:
            classes[kernel_class(k.name, k.kind, k.op.name if k.op else None)] += k.dur_us / count
            row = kernels[short_name(k.name)]
            row[0] += k.dur_us / count
            row[1] += 1 / count
    top = sorted(kernels.items(), key=lambda item: -item[1][0])[:TOP_KERNELS]
    result = ReplayAttribution(
        replays=count, kernels_per_replay=len(replays[0]), period_us=period_us, graph_busy_us=graph_us, graph_gaps_us=gaps_us,
        outside_kernels_us=outside_us, outside_kernels_per_period=statistics.median(len(k) for k in between), idle_us=idle_us,
        classes_us={name: us for name, us in sorted(classes.items(), key=lambda item: -item[1])},
        kernels=[ReplayKernel(name=name, us=us, count=round(calls, 2), share_of_period=us / period_us, bytes=(kernel_bytes or {}).get(name))
                 for name, (us, calls) in top],
        roof=roof, roof_percent=100.0 * roof.roof_us() / period_us if roof is not None else None)
    return result.model_copy(update={"findings": findings(result)})


def findings(a: ReplayAttribution) -> list[str]:
    """Where the period goes, largest part first, and what would close the distance to the roof."""
    parts = {"the graph's kernels": a.graph_busy_us, "gaps between the graph's kernels": a.graph_gaps_us,
             "kernels and copies launched outside the graph between replays": a.outside_kernels_us,
             "the device idle between replays (the host's work: sampling, stopping checks, Python)": a.idle_us}
    said = [f"{a.replays} replays of one graph ({a.kernels_per_replay} kernels each), one every {a.period_us:.1f} us (MEASURED, the "
            "median period from one replay's first kernel to the next's): " + "; ".join(
                f"{name} {us:.1f} us ({100 * us / a.period_us:.0f} %)" for name, us in sorted(parts.items(), key=lambda item: -item[1]))]
    if a.roof is not None and a.roof_percent is not None:
        said.append(f"{a.roof_percent:.1f} % of the roof: {a.roof.describe()} -> {a.roof.roof_us():.1f} us a replay")
        if a.roof.roof_us() > 0:
            said.append(f"the graph's kernels alone take {a.graph_busy_us / a.roof.roof_us():.1f}x the roof")
    said += _gemm_finding(a)
    said += [_kernel_bandwidth(k, a.roof) for k in a.kernels if k.gb_s() is not None]
    largest = max(parts, key=parts.__getitem__)
    if largest != "the graph's kernels":
        said.append(f"the largest part is {largest}: a faster kernel shortens at most the graph's "
                    f"{100 * a.graph_busy_us / a.period_us:.0f} %; capture more of the token in the graph (sampling and the stopping check "
                    "inside it) or cut the host's work between replays")
    elif a.kernels:
        top = a.kernels[0]
        said.append(f"the largest kernel is {top.name}: {top.us:.1f} us a replay ({100 * top.share_of_period:.0f} % of the period, "
                    f"{top.count:g} call(s)); {a.kernels_per_replay} kernels a replay: fewer, larger kernels shorten the gaps")
    return said


def _kernel_bandwidth(kernel: ReplayKernel, roof: ReplayRoof | None) -> str:
    """How close a kernel whose bytes its route counted comes to its own roof: its bytes at the replay roof's bandwidth."""
    rate = kernel.gb_s() or 0.0
    said = f"{kernel.name} reads {kernel.bytes / 1e6:.1f} MB a replay in {kernel.us:.1f} us: {rate:.0f} GB/s"
    if roof is None:
        return said + " (no memory ceiling to compare it with)"
    return said + (f", {100 * rate / roof.bandwidth_gb_s:.0f} % of {roof.bandwidth_gb_s:.0f} GB/s ({roof.source}): its own roof "
                   f"{kernel.bytes / (roof.bandwidth_gb_s * 1e3):.1f} us")


def _gemm_finding(a: ReplayAttribution) -> list[str]:
    """Where GEMMs are the graph's largest class and the replay's bytes are known: the bandwidth they read those bytes
    at (the replay's bytes over the GEMMs' time: an upper bound of theirs, as other kernels read some of the bytes) and
    the levers that act on them."""
    gemm_us = a.classes_us.get("gemm", 0.0)
    if a.roof is None or not a.roof.bytes_per_replay or gemm_us <= 0 or gemm_us < max(a.classes_us.values()):
        return []
    rate_gb_s = a.roof.bytes_per_replay / (gemm_us * 1e3)
    return [f"GEMMs take {gemm_us:.1f} us of the graph's {a.graph_busy_us:.1f} us: the replay's {a.roof.bytes_per_replay / 1e6:.1f} MB "
            f"over them is at most {rate_gb_s:.0f} GB/s, {100 * rate_gb_s / a.roof.bandwidth_gb_s:.0f} % of the roof's "
            f"{a.roof.bandwidth_gb_s:.0f} GB/s; what acts on them: fewer, wider GEMMs (the fuse_projections lever), a GEMV streaming each "
            "weight row once for a decode step's few rows (decode_gemv: on the H200 3.1-3.6 us where cuBLAS took 5 for a 1.2B decoder's "
            "8-13 MB projections) and narrower weights (int8_weight_only with inductor_coordinate_descent, under a "
            "looser tolerance declared at freeze; measure it: Inductor may lower it to a slower GEMV)"]


def _replays(trace: Trace) -> list[list[Kernel]]:
    """The kernels of each launch of the most launched graph (by its kernels' names), in launch order."""
    launched = set(trace.graph_launches)
    if not launched:
        return []
    by_launch: dict[int, list[Kernel]] = defaultdict(list)
    for k in trace.kernels:
        if k.correlation in launched:
            by_launch[k.correlation].append(k)
    ordered = [sorted(kernels, key=lambda k: k.start_us) for kernels in by_launch.values()]
    shapes = Counter(tuple(k.name for k in r) for r in ordered)
    if not shapes:
        return []
    common = shapes.most_common(1)[0][0]
    return sorted((r for r in ordered if tuple(k.name for k in r) == common), key=lambda r: r[0].start_us)


def _busy_us(kernels: list[Kernel]) -> float:
    """Time at least one of `kernels` ran (overlaps counted once)."""
    busy, end = 0.0, float("-inf")
    for k in sorted(kernels, key=lambda k: k.start_us):
        if k.end_us > end:
            busy += k.end_us - max(k.start_us, end)
            end = k.end_us
    return busy
