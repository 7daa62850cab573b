"""The numpy reference of allreduce_int6, end to end, over N ranks held in one process."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.packing import WireFormat
from hyperloom.tools.allreduce.quantize import (
    PartialSums,
    Rounding,
    block_amax,
    block_count,
    code_bound,
    dequantize,
    padded_length,
    quantize,
    shared_scales,
)
from hyperloom.tools.allreduce.ring import ring_allreduce, scale_exchange_bytes


@dataclass(frozen=True)
class Scheme:
    """The parameters every rank must agree on."""

    block: int = 128
    rounding: Rounding = "nearest"
    seed: int = 0
    partial_sums: PartialSums = "fit_int6"


@dataclass(frozen=True)
class Int6Outcome:
    results: list[np.ndarray]  # per rank: float32 s·Σq, flat, the input's length
    scales: np.ndarray  # float32 per block, over the padded length
    q_max: int
    quantized_to_zero: int  # nonzero inputs, over all ranks, whose code is 0
    wire_bytes: list[int]  # per rank: ring payload plus the scale exchange
    formats: list[WireFormat]


def non_finite_error(counts: list[int]) -> HyperloomError:
    """The one message for NaN/Inf inputs, whichever implementation found them."""
    named = ", ".join(f"rank {rank}: {count}" for rank, count in enumerate(counts) if count)
    return HyperloomError(
        f"non-finite inputs (NaN or Inf) reached the all-reduce ({named}); a shared scale cannot represent them",
        "find where the NaN/Inf is produced on that rank and fix it before the all-reduce",
    )


def reference_allreduce(values: list[np.ndarray], scheme: Scheme) -> Int6Outcome:
    """All-reduce N ranks' flat float32 arrays (equal lengths, finite) as the distributed version does."""
    ranks, length = len(values), values[0].size
    counts = [int(v.size - np.count_nonzero(np.isfinite(v))) for v in values]
    if any(counts):
        raise non_finite_error(counts)
    q_max = code_bound(ranks, scheme.partial_sums)
    padded = []
    for v in values:
        p = np.zeros(padded_length(length, ranks), dtype=np.float32)
        p[:length] = v
        padded.append(p)
    amax = np.max([block_amax(p, scheme.block) for p in padded], axis=0)  # the max all-reduce
    scales = shared_scales(amax, q_max)
    codes = [quantize(p, scales, scheme.block, q_max, scheme.rounding, scheme.seed, r) for r, p in enumerate(padded)]
    zeroed = sum(int(np.count_nonzero((c[:length] == 0) & (v != 0))) for c, v in zip(codes, values, strict=True))
    ring = ring_allreduce(codes, q_max)
    exchange = scale_exchange_bytes(block_count(padded[0].size, scheme.block), ranks)
    return Int6Outcome(
        results=[dequantize(s, scales, scheme.block)[:length] for s in ring.sums],
        scales=scales,
        q_max=q_max,
        quantized_to_zero=zeroed,
        wire_bytes=[b + exchange for b in ring.bytes_sent],
        formats=ring.formats,
    )
