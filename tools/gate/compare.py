"""Element-wise comparison of one chunk of a candidate against its reference.

Semantics (evaluated in float64): an element matches when |c − r| ≤ atol + rtol·|r|, or, when
max_ulp is set and the dtype is floating point, when c lies within max_ulp ULPs of r, counted in the
dtype's own ULPs (bfloat16 and fp8 decoded from their ml_dtypes arrays, never compared as bit patterns). NaN follows
the policy ('forbid': every NaN is a mismatch; 'match': NaN must meet NaN). ±Inf must equal the
reference exactly. −0.0 equals 0.0.

Speed: a fast pass in the input's own precision (float32 for float32 and the narrower floats) accepts most
elements against a threshold shrunk by a safety margin, so it never accepts an element that the
float64 rule rejects. Every element it does not accept is decided again, exactly, in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hyperloom.core.dtypes import is_float
from hyperloom.tools.gate.models import Tolerance

# The fast pass's threshold is shrunk by this factor: it outweighs the float32/float64 rounding
# of |c − r| and of atol + rtol·|r| (a few units of 2^-24 at most).
_SAFETY = 1.0 - 2.0**-20


@dataclass(frozen=True)
class MismatchRow:
    flat_index: int
    candidate: int | float
    reference: int | float
    abs_error: float | None
    ulp: int | None


@dataclass
class ChunkStats:
    """What one chunk contributes to a case's verdict; chunks merge in any order."""

    mismatches: int = 0
    finite_pairs: int = 0
    max_abs: float = 0.0
    has_rel: bool = False
    max_rel: float = 0.0
    ulp_pairs: int = 0
    max_ulp: int = 0
    nan_candidate: int = 0
    nan_reference: int = 0
    inf_candidate: int = 0
    inf_reference: int = 0
    first: list[MismatchRow] = field(default_factory=list)

    def merge(self, other: ChunkStats, keep: int) -> ChunkStats:
        return ChunkStats(
            mismatches=self.mismatches + other.mismatches,
            finite_pairs=self.finite_pairs + other.finite_pairs,
            max_abs=max(self.max_abs, other.max_abs),
            has_rel=self.has_rel or other.has_rel,
            max_rel=max(self.max_rel, other.max_rel),
            ulp_pairs=self.ulp_pairs + other.ulp_pairs,
            max_ulp=max(self.max_ulp, other.max_ulp),
            nan_candidate=self.nan_candidate + other.nan_candidate,
            nan_reference=self.nan_reference + other.nan_reference,
            inf_candidate=self.inf_candidate + other.inf_candidate,
            inf_reference=self.inf_reference + other.inf_reference,
            first=sorted(self.first + other.first, key=lambda row: row.flat_index)[:keep],
        )


def compare_chunk(candidate: np.ndarray, reference: np.ndarray, tolerance: Tolerance, start: int, keep: int) -> ChunkStats:
    """Compare two flat chunks of one dtype; `start` is the chunk's flat offset in the array."""
    if candidate.dtype != reference.dtype or candidate.shape != reference.shape:
        raise ValueError("compare_chunk needs two chunks of one dtype and length")  # a caller bug, not input
    with np.errstate(all="ignore"):
        if is_float(candidate.dtype):
            return _float_chunk(candidate, reference, tolerance, start, keep)
        return _integer_chunk(candidate, reference, tolerance, start, keep)


# ---------------------------------------------------------------- floating point


def _round_down(value: float, work: type[np.floating]) -> np.floating:
    rounded = work(value)
    return np.nextafter(rounded, work(0)) if float(rounded) > value else rounded


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.dtype(f"i{values.dtype.itemsize}"))


def ordered_keys(values: np.ndarray) -> np.ndarray:
    """Integers that order like the floats, one apart per ULP; −0.0 and 0.0 share key 0. Every format compared is
    sign-magnitude with its finite values consecutive in their bits, fp8 included (an fnuz NaN, −0.0's bits, is never finite)."""
    bits = _bits(values).astype(np.int64)
    magnitude = bits & ((1 << (8 * values.dtype.itemsize - 1)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a − b| in ULPs for finite floats of one dtype, as unsigned 64-bit integers.

    Keys of float64 span the whole int64 range, so their difference is taken modulo 2**64,
    which is exact for a distance below 2**64.
    """
    keys_a, keys_b = ordered_keys(a), ordered_keys(b)
    return np.where(keys_a >= keys_b, keys_a - keys_b, keys_b - keys_a).view(np.uint64)


def _float_chunk(c: np.ndarray, r: np.ndarray, tol: Tolerance, start: int, keep: int) -> ChunkStats:
    work = np.float64 if c.dtype.itemsize == 8 else np.float32
    cw = c.astype(work, copy=False)
    rw = r.astype(work, copy=False)

    # Fast pass: accept |c − r| ≤ (atol + rtol·|r|)·SAFETY − 2 subnormal steps, in `work` precision.
    abs_ref = np.abs(rw)
    threshold = abs_ref * _round_down(tol.rtol * _SAFETY, work)
    # Subnormal products and sums round by up to half a step: two steps less make up for both.
    threshold += _round_down(tol.atol * _SAFETY, work) - 2 * np.finfo(work).smallest_subnormal
    np.clip(threshold, 0, np.finfo(work).max, out=threshold)  # 0 still accepts exact equality; inf never accepts
    diff = cw - rw
    np.abs(diff, out=diff)
    accepted = diff <= threshold  # NaN and inf−inf compare False: decided below

    stats = ChunkStats(max_abs=float(np.max(diff, where=accepted, initial=0)))
    stats.has_rel = bool(np.max(abs_ref, where=accepted, initial=0) > 0)
    if stats.has_rel:
        np.copyto(abs_ref, np.inf, where=abs_ref == 0)
        relative = np.divide(diff, abs_ref, out=abs_ref)
        stats.max_rel = float(np.max(relative, where=accepted, initial=0))
        if math.isinf(stats.max_rel):  # float32 overflow of a huge ratio: redo in float64
            wide = accepted & (rw != 0)
            stats.max_rel = float(np.max(np.abs(c[wide].astype(np.float64) - r[wide]) / np.abs(r[wide].astype(np.float64))))

    # Special values: count them, and mask them out of the ULP maximum only when present.
    finite_c, finite_r = np.isfinite(cw), np.isfinite(rw)
    n_finite_c, n_finite_r = int(np.count_nonzero(finite_c)), int(np.count_nonzero(finite_r))
    all_finite = n_finite_c == c.size and n_finite_r == r.size
    finite = None if all_finite else finite_c & finite_r
    if not all_finite:
        stats.nan_candidate = int(np.count_nonzero(np.isnan(cw)))
        stats.nan_reference = int(np.count_nonzero(np.isnan(rw)))
        stats.inf_candidate = c.size - n_finite_c - stats.nan_candidate
        stats.inf_reference = r.size - n_finite_r - stats.nan_reference
    stats.finite_pairs = stats.ulp_pairs = c.size if finite is None else int(np.count_nonzero(finite))

    # ULPs: for two floats of one sign, the distance is the difference of their bit patterns.
    bits_c, bits_r = _bits(c), _bits(r)
    same_sign = (bits_c ^ bits_r) >= 0
    distance = bits_c - bits_r  # wraps only where the signs differ; those are redone below
    np.abs(distance, out=distance)
    counted = same_sign if finite is None else same_sign & finite
    stats.max_ulp = int(np.max(distance.view(f"u{c.dtype.itemsize}"), where=counted, initial=0))
    if np.count_nonzero(same_sign) < c.size:
        crossing = np.flatnonzero(~same_sign if finite is None else ~same_sign & finite)
        if crossing.size:
            stats.max_ulp = max(stats.max_ulp, int(ulp_distance(c[crossing], r[crossing]).max()))

    # Exact pass, in float64, over everything the fast pass did not accept.
    pending = np.flatnonzero(~accepted)
    if pending.size == 0:
        return stats
    cs = c[pending].astype(np.float64)
    rs = r[pending].astype(np.float64)
    both_finite = np.isfinite(cs) & np.isfinite(rs)
    ulps = ulp_distance(c[pending], r[pending])
    abs_err = np.abs(cs - rs)
    match = both_finite & (abs_err <= tol.atol + tol.rtol * np.abs(rs))
    if tol.max_ulp is not None:
        match |= both_finite & (ulps <= tol.max_ulp)
    nan_c, nan_r = np.isnan(cs), np.isnan(rs)
    match |= ~both_finite & ~nan_c & ~nan_r & (cs == rs)  # ±Inf meets the same ±Inf
    if tol.nan_policy == "match":
        match |= nan_c & nan_r

    if both_finite.any():
        stats.max_abs = max(stats.max_abs, float(abs_err[both_finite].max()))
        nonzero = both_finite & (rs != 0)
        if nonzero.any():
            stats.has_rel = True
            stats.max_rel = max(stats.max_rel, float((abs_err[nonzero] / np.abs(rs[nonzero])).max()))

    failed = np.flatnonzero(~match)
    stats.mismatches = int(failed.size)
    stats.first = [
        MismatchRow(
            flat_index=start + int(pending[i]),
            candidate=float(cs[i]),
            reference=float(rs[i]),
            abs_error=float(abs_err[i]) if both_finite[i] else None,
            ulp=int(ulps[i]) if both_finite[i] else None,
        )
        for i in failed[:keep]
    ]
    return stats


# ---------------------------------------------------------------- integers and bool


def _integer_chunk(c: np.ndarray, r: np.ndarray, tol: Tolerance, start: int, keep: int) -> ChunkStats:
    if c.dtype.kind == "b":
        c, r = c.view(np.uint8), r.view(np.uint8)
    wide = np.uint64 if c.dtype == np.uint64 else np.int64
    cw, rw = c.astype(wide, copy=False), r.astype(wide, copy=False)
    abs_diff = np.where(cw >= rw, cw - rw, rw - cw).view(np.uint64).astype(np.float64)
    abs_ref = np.abs(rw.astype(np.float64))
    match = abs_diff <= tol.atol + tol.rtol * abs_ref

    stats = ChunkStats(finite_pairs=c.size, max_abs=float(abs_diff.max(initial=0)))
    nonzero = abs_ref > 0
    if nonzero.any():
        stats.has_rel = True
        stats.max_rel = float((abs_diff[nonzero] / abs_ref[nonzero]).max())
    failed = np.flatnonzero(~match)
    stats.mismatches = int(failed.size)
    stats.first = [
        MismatchRow(start + int(i), int(c[i]), int(r[i]), float(abs_diff[i]), None) for i in failed[:keep]
    ]
    return stats
