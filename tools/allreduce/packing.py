"""Wire formats of integer codes: four signed 6-bit values in three bytes, and plain int8/int16.

int6 layout (little-endian, the same in the torch mirror): values a, b, c, d in [-32, 31] form the
24-bit word a | b<<6 | c<<12 | d<<18 (each as its 6-bit two's complement), stored low byte first.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

WireFormat = Literal["int6", "int8", "int16"]
INT6_MIN, INT6_MAX = -32, 31
BYTES_PER_VALUE: dict[str, float] = {"int6": 0.75, "int8": 1.0, "int16": 2.0}
_LIMITS: tuple[tuple[WireFormat, int], ...] = (("int6", INT6_MAX), ("int8", 127), ("int16", 32767))

CHUNK_VALUES = 1 << 18  # 1 MiB of uint32 words per temporary: they stay in cache, which doubles throughput

# The 4 bytes of a little-endian uint32 hold a, b, c, d; each step moves one 6-bit field into place.
_PACK_STEPS = ((2, 0xFC0), (4, 0x3F000), (6, 0xFC0000))  # right shift, then mask
# Unpacking spreads the 24-bit word back over 4 bytes, each field in the top 6 bits of its byte,
# so an arithmetic right shift by 2 of each int8 sign-extends it.
_UNPACK_STEPS = ((2, 0xFC), (4, 0xFC00), (6, 0xFC0000), (8, 0xFC000000))  # left shift, then mask


def wire_format_for(bound: int) -> WireFormat:
    """The narrowest format that holds every integer in [-bound, bound]."""
    for name, limit in _LIMITS:
        if bound <= limit:
            return name
    raise ValueError(f"no wire format holds ±{bound}")


def wire_bytes(count: int, fmt: WireFormat) -> int:
    """Bytes that `count` values take in `fmt` (int6 needs count divisible by 4)."""
    return count * 3 // 4 if fmt == "int6" else count * int(BYTES_PER_VALUE[fmt])


def pack_int6(codes: np.ndarray) -> np.ndarray:
    """int8 values in [-32, 31], length divisible by 4 → uint8 bytes, 3 per 4 values."""
    codes = np.ascontiguousarray(codes, dtype=np.int8).reshape(-1)
    if codes.size % 4:
        raise ValueError(f"int6 packing needs a multiple of 4 values, got {codes.size}")
    out = np.empty(codes.size // 4 * 3, dtype=np.uint8)
    words = codes.view("<u4")
    for start in range(0, words.size, CHUNK_VALUES // 4):
        w = words[start : start + CHUNK_VALUES // 4]
        packed = np.bitwise_and(w, 0x3F)
        tmp = np.empty_like(w)
        for shift, mask in _PACK_STEPS:
            np.right_shift(w, shift, out=tmp)
            np.bitwise_and(tmp, mask, out=tmp)
            np.bitwise_or(packed, tmp, out=packed)
        out[start * 3 : (start + w.size) * 3].reshape(-1, 3)[...] = packed.view(np.uint8).reshape(-1, 4)[:, :3]
    return out


def unpack_int6(data: np.ndarray) -> np.ndarray:
    """uint8 bytes (3 per 4 values) → int8 values in [-32, 31]."""
    data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
    if data.size % 3:
        raise ValueError(f"int6 data must be a multiple of 3 bytes, got {data.size}")
    groups = data.size // 3
    out = np.empty(groups * 4, dtype=np.int8)
    out_words = out.view("<u4")
    step = CHUNK_VALUES // 4
    padded = np.zeros(step * 3 + 1, dtype=np.uint8)  # one spare byte: the last 3-byte group is read as 4
    for start in range(0, groups, step):
        count = min(step, groups - start)
        padded[: count * 3] = data[start * 3 : (start + count) * 3]
        # Overlapping little-endian uint32 reads at a 3-byte stride: word i holds group i in its low 24 bits.
        w = np.ndarray((count,), dtype="<u4", buffer=padded, strides=(3,))
        spread = out_words[start : start + count]
        tmp = np.empty(count, dtype=np.uint32)
        (shift, mask), *rest = _UNPACK_STEPS
        np.left_shift(w, shift, out=spread)
        np.bitwise_and(spread, mask, out=spread)
        for shift, mask in rest:
            np.left_shift(w, shift, out=tmp)
            np.bitwise_and(tmp, mask, out=tmp)
            np.bitwise_or(spread, tmp, out=spread)
    np.right_shift(out, 2, out=out)
    return out


def encode(values: np.ndarray, fmt: WireFormat) -> np.ndarray:
    """Integer values (known to fit `fmt`) → the bytes that travel."""
    if fmt == "int6":
        return pack_int6(values.astype(np.int8, copy=False))
    return np.ascontiguousarray(values, dtype="<i1" if fmt == "int8" else "<i2").view(np.uint8).reshape(-1)


def decode(data: np.ndarray, fmt: WireFormat) -> np.ndarray:
    """The bytes that travelled → int16 values (the width partial sums accumulate in)."""
    if fmt == "int6":
        return unpack_int6(data).astype(np.int16)
    return np.ascontiguousarray(data).view("<i1" if fmt == "int8" else "<i2").astype(np.int16)
