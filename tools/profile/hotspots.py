"""Hotspots: work items placed on the roof and ranked by time x headroom (the time a kernel at the roof would save)."""

from __future__ import annotations

from hyperloom.tools.profile.group import WorkItem, is_device_copy
from hyperloom.tools.profile.models import Hotspot
from hyperloom.tools.profile.roof import HOST_LINK, Roofs, place_work
from hyperloom.tools.profile.tensors import arguments


def item_dtype(item: WorkItem) -> str | None:
    """The dtype of the first tensor its op was called with (None without an op or shapes)."""
    tensors = [t for t in arguments(item.op) if t is not None] if item.op is not None else []
    return tensors[0].dtype if tensors else None


def hotspot(item: WorkItem, roofs: Roofs, device_us: float) -> Hotspot:
    seconds = item.total_us / 1e6
    calls = max(len(item.calls), 1)
    work = item.work
    total_bytes = work.bytes_moved * calls if work else None
    total_flops = work.flops * calls if work else None
    host_link = item.op is None and item.kernel_class == "memory copy" and not is_device_copy(item.label)
    placed = place_work(item.kernel_class, item_dtype(item), total_bytes, total_flops, seconds, roofs, host_link=host_link)
    headroom = seconds * max(0.0, 1 - placed.percent / 100) if placed.percent is not None else None
    model = work.model if work else item.model_note or "no byte/flop model for this class"
    if placed.percent is None and work and not host_link and roofs.ceilings:
        model += "; none of the roofs fits its class and dtype"
    op = item.op
    return Hotspot(
        rank=0, label=item.label, kernel_class=item.kernel_class, op=op.name if op else None,
        input_dims=[d if isinstance(d, list) and all(isinstance(v, int) for v in d) else None for d in op.dims] if op and op.dims else None,
        input_types=[str(t) for t in op.types] if op and op.types else None,
        kernels=[name for name, _ in item.kernels.most_common(3)], calls=calls, total_s=seconds,
        percent_of_device_time=100 * item.total_us / device_us if device_us else 0.0, mean_s=seconds / calls,
        bytes_per_call=work.bytes_moved if work else None, flops_per_call=work.flops if work else None,
        achieved_gbps=total_bytes / seconds / 1e9 if total_bytes and seconds else None,
        achieved_tflops=total_flops / seconds / 1e12 if total_flops and seconds else None,
        arithmetic_intensity=work.flops / work.bytes_moved if work and work.flops and work.bytes_moved else None,
        roof=placed.roof, attainable=placed.attainable, roof_unit=placed.unit, percent_of_roof=placed.percent, bound=placed.bound,
        roof_tag=placed.tag, headroom_s=headroom, score_s=headroom if headroom is not None else seconds,
        work_model=model + (f"; {HOST_LINK}" if host_link else ""),
    )


def rank_hotspots(items: list[WorkItem], roofs: Roofs, device_us: float) -> list[tuple[Hotspot, WorkItem]]:
    """Every work item as a hotspot, highest score first (ties: the longer total time), beside the item it came from."""
    ranked = sorted(((hotspot(item, roofs, device_us), item) for item in items), key=lambda p: (p[0].score_s, p[0].total_s), reverse=True)
    for rank, (spot, _) in enumerate(ranked, start=1):
        spot.rank = rank
    return ranked
