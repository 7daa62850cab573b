"""What an all-reduce's result is worth: error against the float64 sum, the analytic bound, drift, bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.dtypes import FloatName, as_float64, from_float32
from hyperloom.tools.allreduce.models import WireStats
from hyperloom.tools.allreduce.packing import wire_bytes
from hyperloom.tools.allreduce.quantize import Rounding, block_count, error_bound
from hyperloom.tools.allreduce.reference import Int6Outcome
from hyperloom.tools.allreduce.ring import SCALE_BYTES, ring_allreduce_bytes


@dataclass(frozen=True)
class ErrorStats:
    max_abs_error: float
    max_rel_error: float | None
    mean_abs_error: float
    error_bound_abs: float
    bound_utilisation: float
    within_bound: bool
    cross_rank_drift: float
    bit_identical_across_ranks: bool


def stored_results(outcome: Int6Outcome, kind: FloatName, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Every rank's float32 result in the input's dtype; a sum the dtype cannot hold is an error."""
    stored = [from_float32(r, kind).reshape(shape) for r in outcome.results]
    values = as_float64(stored[0], kind)
    overflow = int(values.size - np.count_nonzero(np.isfinite(values)))
    if overflow:
        raise HyperloomError(
            f"the sum overflows {kind} at {overflow} element(s): the inputs are within range, their sum is not",
            "all-reduce in float32 (cast the inputs), or scale them down before the all-reduce",
        )
    return stored


def error_stats(
    values: list[np.ndarray], stored: list[np.ndarray], kind: FloatName, outcome: Int6Outcome, rounding: Rounding, block: int
) -> ErrorStats:
    ranks = len(values)
    exact = np.sum([v.astype(np.float64) for v in values], axis=0)
    result = as_float64(stored[0], kind).reshape(-1)
    error = np.abs(result - exact)
    nonzero = exact != 0
    bound = error_bound(outcome.scales, ranks, outcome.q_max, rounding, kind)
    per_element = np.repeat(bound, block)[: exact.size]
    drift = max(float(np.max(np.abs(as_float64(s, kind).reshape(-1) - result))) for s in stored)
    identical = all(s.tobytes() == stored[0].tobytes() for s in stored)
    return ErrorStats(
        max_abs_error=float(error.max()),
        max_rel_error=float((error[nonzero] / np.abs(exact[nonzero])).max()) if nonzero.any() else None,
        mean_abs_error=float(error.mean()),
        error_bound_abs=float(bound.max()),
        bound_utilisation=float((error / per_element).max()),
        within_bound=bool(np.all(error <= per_element)),
        cross_rank_drift=drift,
        bit_identical_across_ranks=identical,
    )


def wire_stats(elements: int, padded: int, block: int, outcome: Int6Outcome) -> WireStats:
    ranks = len(outcome.results)
    payload = wire_bytes(padded, "int6") + SCALE_BYTES * block_count(padded, block)
    fp16_ring = ring_allreduce_bytes(elements, 2, ranks)
    sent = outcome.wire_bytes
    return WireStats(
        payload_bytes_per_rank=payload,
        compression_vs_fp16=2 * elements / payload,
        compression_vs_fp32=4 * elements / payload,
        wire_bytes_per_rank=sent,
        fp16_ring_wire_bytes_per_rank=fp16_ring,
        wire_ratio_vs_fp16=fp16_ring / max(sent) if ranks > 1 else None,
        step_formats=list(outcome.formats),
    )


def precision_note(nonzero: int, zeroed: int, values: list[np.ndarray], block: int) -> str | None:
    """Names the precision lost when small values share a block with large ones."""
    if not zeroed:
        return None
    widest = 0.0
    for v in values:
        blocks = np.abs(np.pad(v, (0, -v.size % block)).reshape(-1, block))
        tiny = np.where(blocks > 0, blocks, np.inf).min(axis=1)
        spans = blocks.max(axis=1)[np.isfinite(tiny)] / tiny[np.isfinite(tiny)]
        widest = max(widest, float(spans.max()) if spans.size else 0.0)
    return (
        f"{zeroed} of {nonzero} nonzero inputs ({100 * zeroed / max(nonzero, 1):.3g} %) were below half a quantization step "
        f"of their block and became 0; the widest block spans 2^{np.log2(widest):.0f} between its smallest and largest "
        "magnitude, while 6-bit codes resolve about 2^5. Use a smaller block, or keep such tensors out of int6 all-reduce"
    )
