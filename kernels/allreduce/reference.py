"""References of the INT6 all-reduce device code, in the allreduce reference's wire layout.

Codes a, b, c, d in [-32, 31] form the 24-bit word a | b<<6 | c<<12 | d<<18 (6-bit two's complement
each), stored low byte first: the layout of tools/allreduce/packing.py (pack_int6 / unpack_int6),
checked bit for bit in tests/test_allreduce_kernels.py when that module is installed.
"""

from __future__ import annotations

import numpy as np

from hyperloom.core.errors import HyperloomError


def pack_int6(codes: np.ndarray) -> np.ndarray:
    """int8 or int16 codes in [-32, 31], a multiple of 4 → 3 bytes per 4 codes."""
    codes = np.asarray(codes).reshape(-1)
    if codes.dtype not in (np.int8, np.int16) or codes.size % 4:
        raise HyperloomError(f"int6 packing takes int8 or int16 codes in groups of 4, got {codes.dtype} × {codes.size}",
                             "pad to a multiple of 4 integer codes")
    if codes.size and (codes.min() < -32 or codes.max() > 31):
        raise HyperloomError(f"int6 codes lie in [-32, 31], got [{codes.min()}, {codes.max()}]", "requantize with a bound of 31")
    fields = (codes.astype(np.uint32) & 63).reshape(-1, 4)
    word = fields[:, 0] | fields[:, 1] << 6 | fields[:, 2] << 12 | fields[:, 3] << 18
    return np.stack([word & 0xFF, (word >> 8) & 0xFF, word >> 16], axis=1).astype(np.uint8).reshape(-1)


def unpack_int6(data: np.ndarray) -> np.ndarray:
    """3 bytes per 4 codes → int8 codes in [-32, 31]."""
    data = np.asarray(data, dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
    word = data[:, 0] | data[:, 1] << 8 | data[:, 2] << 16
    fields = np.stack([(word >> (6 * i)) & 63 for i in range(4)], axis=1).astype(np.int16)
    return np.where(fields > 31, fields - 64, fields).astype(np.int8).reshape(-1)


def pack(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    return {"data": pack_int6(inputs["codes"])}


def _added(inputs: dict[str, np.ndarray]) -> np.ndarray:
    return (inputs["acc"].astype(np.int16) + unpack_int6(inputs["data"])).astype(np.int16)  # int16 wraps as the device does


def unpack_add(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    return {"acc": unpack_int6(inputs["data"]).astype(np.int16) if shape["store"] else _added(inputs)}


def unpack_accumulate(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    n, block = shape["n"], shape["block"]
    if n % 4 or n % block:
        raise HyperloomError(f"n = {n} must be a multiple of 4 and of the block {block}", "pad the buffer to whole blocks of whole groups")
    acc = _added(inputs)
    out = acc.astype(np.float32).reshape(-1, block) * inputs["scales"].astype(np.float32)[:, None]
    return {"acc": acc, "out": out.reshape(-1)}
