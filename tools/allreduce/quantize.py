"""Shared per-block scales, 6-bit codes (nearest or seeded stochastic rounding) and the error bound.

The scheme, for N ranks and a block of B consecutive elements:

* amax = max over every rank and element of the block of |x| (one max all-reduce of a float32
  per block). Q is the largest code a rank may contribute: with ``fit_int6`` Q = ⌊31/N⌋, so the
  N-way sum of codes lies in [-31, 31] and every partial and final sum travels as int6; with
  ``widen`` Q = 31 and partial sums travel in the narrowest of int6/int8/int16 that holds k·31
  after k contributions. Either way |Σq| ≤ N·Q and the int16 accumulator cannot overflow
  (N ≤ 1024).
* s = the smallest float32 with s·Q ≥ amax (fl(amax/Q), one ulp up when the product falls
  short; 0 for an all-zero block), so |x/s| ≤ Q and nearest rounding needs no clipping.
* q = rint(fl32(x/s)) (ties to even), or, stochastic, clip(floor(fl32(x/s + u)), -Q, Q) with u a
  seeded counter-hash uniform in [0, 1) per (seed, rank, element); y = cast(fl32(s·Σq)).

Error bound per element of a block, against the float64 sum of the inputs (all three input
dtypes convert to float32 exactly; u = 2^-24):

    |y − Σx| ≤ N·s·ρ + u·N·Q·s + 2^-150 + u_out·(N·Q·s·(1+u) + 2^-150) + η_out + N(N−1)·2^-53·Q·s

with ρ = 1/2 + Q·u + 2^-149 (nearest) or 1 + (2Q+1)·u + 2^-149 (stochastic): the rounding of each
rank's code, of fl32(x/s), of fl32(s·Σq), of the cast to the output dtype (u_out = 2^-11 fp16,
2^-8 bf16, 0 fp32; η_out half its smallest subnormal), and of the float64 reference sum itself.
The leading term is N·ρ/Q of the block's amax: 1/15 for two ranks with fit_int6, 1/31 with widen.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.packing import INT6_MAX

Rounding = Literal["nearest", "stochastic"]
PartialSums = Literal["fit_int6", "widen"]
MAX_RANKS = 1024  # 1024 · 31 < 32767: the int16 accumulator holds any sum

UNIT_ROUNDOFF_F32 = 2.0**-24
OUTPUT_ROUNDOFF = {"float32": 0.0, "float16": 2.0**-11, "bfloat16": 2.0**-8}
OUTPUT_HALF_SUBNORMAL = {"float32": 0.0, "float16": 2.0**-25, "bfloat16": 2.0**-134}

_M32 = 0xFFFFFFFF


def code_bound(ranks: int, partial_sums: PartialSums) -> int:
    """Q: the largest |code| one rank contributes."""
    if not 1 <= ranks <= MAX_RANKS:
        raise HyperloomError(f"{ranks} ranks is outside 1..{MAX_RANKS}", f"use between 1 and {MAX_RANKS} ranks")
    if partial_sums == "widen":
        return INT6_MAX
    if ranks > INT6_MAX:
        raise HyperloomError(
            f"partial_sums='fit_int6' needs at most {INT6_MAX} ranks (each rank's code bound is ⌊31/N⌋), got {ranks}",
            "use partial_sums='widen', which sends partial sums in int8/int16",
        )
    return INT6_MAX // ranks


def padded_length(elements: int, ranks: int) -> int:
    """Length the codes are padded to (with zeros): whole 4-value groups in each of the N ring chunks."""
    group = 4 * ranks
    return -(-elements // group) * group


def block_count(length: int, block: int) -> int:
    return -(-length // block)


def blocks_view(x: np.ndarray, block: int) -> np.ndarray:
    """A flat float32 array, zero-padded to whole blocks, as (blocks, block)."""
    nb = block_count(x.size, block)
    if x.size == nb * block:
        return x.reshape(nb, block)
    padded = np.zeros(nb * block, dtype=x.dtype)
    padded[: x.size] = x
    return padded.reshape(nb, block)


def block_amax(x: np.ndarray, block: int) -> np.ndarray:
    """One rank's max |x| per block (float32; NaN where the block holds NaN)."""
    return np.abs(blocks_view(x, block)).max(axis=1)


def shared_scales(amax: np.ndarray, q_max: int) -> np.ndarray:
    """The smallest float32 s per block with s·Q ≥ amax; 0 for all-zero blocks."""
    amax = np.asarray(amax, dtype=np.float32)
    s = amax / np.float32(q_max)
    short = s.astype(np.float64) * q_max < amax.astype(np.float64)  # exact: 24-bit × ≤5-bit products
    return np.where(short, np.nextafter(s, np.float32(np.inf)), s)


def mul32(x, c: int):
    """(x · c) mod 2^32 for 0 ≤ x < 2^32, in 16-bit halves so no int64 product overflows (numpy or torch)."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def hash32(x):
    """A 32-bit integer mixer (lowbias32) on int64 arrays or tensors in [0, 2^32), operators only."""
    x = x ^ (x >> 16)
    x = mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def stream_key(seed: int, rank: int) -> int:
    """The per-(seed, rank) key of the stochastic-rounding stream."""
    return hash32((seed & _M32) ^ hash32(((seed >> 32) & _M32) ^ hash32((rank + 0x9E3779B9) & _M32)))


def uniform_bits(indices, seed: int, rank: int):
    """24 random bits per element index; u = bits · 2^-24 lies in [0, 1)."""
    return hash32((indices & _M32) ^ stream_key(seed, rank)) >> 8


def quantize(x: np.ndarray, scales: np.ndarray, block: int, q_max: int, rounding: Rounding, seed: int, rank: int) -> np.ndarray:
    """One rank's float32 values (flat) → int8 codes in [-Q, Q], same length."""
    blocks = blocks_view(x, block)
    divisor = np.where(scales > 0, scales, np.float32(1))[:, None]
    v = blocks / divisor
    if rounding == "nearest":
        codes = np.rint(v)
    else:
        u = uniform_bits(np.arange(blocks.size, dtype=np.int64), seed, rank).astype(np.float32) * np.float32(2.0**-24)
        codes = np.clip(np.floor(v + u.reshape(blocks.shape)), -q_max, q_max)
    return codes.astype(np.int8).reshape(-1)[: x.size]


def dequantize(sums: np.ndarray, scales: np.ndarray, block: int) -> np.ndarray:
    """Integer sums (flat) → float32 s·Σq."""
    blocks = blocks_view(sums.astype(np.float32), block)
    return (blocks * scales[:, None]).reshape(-1)[: sums.size]


def error_bound(scales: np.ndarray, ranks: int, q_max: int, rounding: Rounding, out_dtype: str) -> np.ndarray:
    """The analytic bound on |y − Σx| per block (float64); see the module docstring."""
    s = np.asarray(scales, dtype=np.float64)
    u = UNIT_ROUNDOFF_F32
    rho = (0.5 + q_max * u if rounding == "nearest" else 1.0 + (2 * q_max + 1) * u) + 2.0**-149
    top = ranks * q_max * s
    bound = ranks * s * rho + u * top + 2.0**-150
    bound += OUTPUT_ROUNDOFF[out_dtype] * (top * (1 + u) + 2.0**-150) + OUTPUT_HALF_SUBNORMAL[out_dtype]
    return bound + ranks * (ranks - 1) * 2.0**-53 * q_max * s
