"""The three input dtypes (float32, float16, bfloat16) to and from float32, without ml_dtypes.

numpy has no bfloat16. A bfloat16 array arrives as its bit patterns: uint16, or the 2-byte void
(`<V2`) that numpy.save writes for an ml_dtypes.bfloat16 array; either needs `bfloat16_bits`,
since both could hold other things. An in-memory ml_dtypes array is recognised by its dtype name.
bfloat16 results are returned and written as uint16 bit patterns.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hyperloom.core.errors import HyperloomError

FloatName = Literal["float32", "float16", "bfloat16"]


def input_kind(dtype: np.dtype, bfloat16_bits: bool, label: str) -> FloatName:
    """Which of the three floats an array of `dtype` holds; anything else is refused."""
    if dtype.name == "bfloat16":  # an ml_dtypes array handed over in memory
        return "bfloat16"
    if dtype.itemsize == 2 and (dtype.kind == "V" or dtype == np.uint16):
        if bfloat16_bits:
            return "bfloat16"
        raise HyperloomError(
            f"{label} holds 2-byte {'void' if dtype.kind == 'V' else 'uint16'} values ({dtype.str})",
            "if they are bfloat16 bit patterns (numpy.save of an ml_dtypes.bfloat16 array writes <V2), pass bfloat16_bits=true",
        )
    if dtype.kind == "f" and dtype.itemsize in (2, 4):
        return "float16" if dtype.itemsize == 2 else "float32"
    raise HyperloomError(
        f"{label} has dtype {dtype.str!r}; allreduce_int6 takes float32, float16 or bfloat16",
        "cast to float32 (float64 too: the all-reduce would narrow it anyway), or save bfloat16 bit patterns as uint16 with "
        "bfloat16_bits=true",
    )


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Exact: a bfloat16 is the top half of a float32."""
    return (np.ascontiguousarray(bits).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties to even (as torch and ml_dtypes do), for finite values; overflow gives ±Inf."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def to_float32(array: np.ndarray, kind: FloatName) -> np.ndarray:
    """The values as a flat float32 array (exact for all three kinds)."""
    if kind == "bfloat16":
        return bf16_bits_to_float32(array.reshape(-1))
    return np.ascontiguousarray(array, dtype=np.float32).reshape(-1)


def from_float32(values: np.ndarray, kind: FloatName) -> np.ndarray:
    """float32 results in the input's kind (bfloat16 as uint16 bit patterns)."""
    if kind == "bfloat16":
        return float32_to_bf16_bits(values)
    with np.errstate(over="ignore"):  # an overflow is reported by the caller, who checks finiteness
        return values.astype(np.float16 if kind == "float16" else np.float32)


def as_float64(stored: np.ndarray, kind: FloatName) -> np.ndarray:
    """Stored results (as from_float32 returns them) as float64 values, for error statistics."""
    return (bf16_bits_to_float32(stored) if kind == "bfloat16" else stored).astype(np.float64)
