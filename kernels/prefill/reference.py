"""References of the prefill GEMMs, y[m, n] = x[m, k] · w[n, k]ᵀ in int32, and numpy models of the two instructions.

* sparse_w4a4: w is 2:4-sparse int4 as compress_2of4 stores it (values + index), x int4 (natural
  nibble order). The reference expands w with the instruction's reading of the index
  (packing.expand_2of4, canonical=False) and multiplies exactly.
* dense_w8a8: w and x int8, the product exact.
Both multiply in float64 BLAS, exact since every partial sum is far below 2^53 (|sum| ≤ 128·128·k).

The instruction models (`swmmac_i32_16x16x64_iu4`, `wmma_i32_16x16x16_iu8`) take one wave's registers
(lane, VGPR) and place every element by the calculator's formulas quoted in packing.py; `emulate`
runs a kernel's loads (prefill.h) through them, tile by tile. No RDNA4 GPU has run the kernels: the
models are what the documentation says the hardware computes, not a measurement.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("hyperloom_prefill_packing", Path(__file__).with_name("packing.py"))
packing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(packing)

ROWS_PER_STEP = 1024  # rows of w expanded at a time: bounds the float64 temporaries
LANES = np.arange(packing.WAVE)


def _check(variant: str, inputs: dict[str, np.ndarray], shape: dict[str, int]) -> tuple[int, int, int]:
    m, n, k, _ = packing.check_shape(variant, shape)
    if variant == "sparse_w4a4":
        packing.check_array("w_vals", inputs["w_vals"], "uint32", (n, k // 16))
        packing.check_array("w_idx", inputs["w_idx"], "uint32", (n, k // 32))
        packing.check_array("x", inputs["x"], "uint32", (m, k // 8))
    else:
        packing.check_array("w", inputs["w"], "int8", (n, k))
        packing.check_array("x", inputs["x"], "int8", (m, k))
    return m, n, k


def _product(x: np.ndarray, w_rows, n: int) -> np.ndarray:
    y = np.empty((x.shape[0], n), np.float64)
    for r0 in range(0, n, ROWS_PER_STEP):
        y[:, r0 : r0 + ROWS_PER_STEP] = x @ w_rows(r0, r0 + ROWS_PER_STEP).astype(np.float64).T
    return y.astype(np.int32)


def sparse_w4a4(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    m, n, k = _check("sparse_w4a4", inputs, shape)
    x = packing.unpack_int4(inputs["x"]).astype(np.float64)
    return {"y": _product(x, lambda a, b: packing.expand_2of4(inputs["w_vals"][a:b], inputs["w_idx"][a:b], canonical=False), n)}


def dense_w8a8(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    m, n, k = _check("dense_w8a8", inputs, shape)
    return {"y": _product(inputs["x"].astype(np.float64), lambda a, b: inputs["w"][a:b], n)}


# --- one wave: registers (32 lanes × VGPRs) in, registers out -------------------------------------------

def _signed(values: np.ndarray, bits: int) -> np.ndarray:
    values = values.astype(np.int64)
    return np.where(values >= 1 << (bits - 1), values - (1 << bits), values)


def _field(regs: np.ndarray, vgpr, shift) -> np.ndarray:
    return (regs[..., vgpr].astype(np.int64) >> shift)


def _d_to_regs(d: np.ndarray) -> np.ndarray:
    """D[i][j] → (32 lanes, 8 VGPRs): lane 16·⌊i/8⌋ + j, VGPR i mod 8."""
    i = 8 * (LANES[:, None] // 16) + np.arange(8)[None]
    return d[..., i, (LANES % 16)[:, None]].astype(np.int32)


def _regs_to_c(c: np.ndarray) -> np.ndarray:
    out = np.zeros((*c.shape[:-2], 16, 16), np.int64)
    i = 8 * (LANES[:, None] // 16) + np.arange(8)[None]
    out[..., i, (LANES % 16)[:, None]] = c
    return out


def swmmac_i32_16x16x64_iu4(a: np.ndarray, b: np.ndarray, c: np.ndarray, index: np.ndarray) -> np.ndarray:
    """D = A·B + C for signed int4 A (sparse) and B; a (…, 32, 2), b (…, 32, 4), index (…, 32) uint32, c/d (…, 32, 8) int32.

    A: lane L holds row i = L mod 16 and logical k in 32·⌊L/16⌋ + [0, 32); its stored nibble p (VGPR
    ⌊p/8⌋, bits 4(p mod 8)..) is slot p mod 2 of block t = ⌊p/2⌋, at k = 32·⌊L/16⌋ + 4t + sel, sel the
    2-bit selector at index bits 4t + 2·(p mod 2). B: lane L holds column j = L mod 16,
    k = 32·⌊L/16⌋ + 8·VGPR + nibble. Repeated selectors add (see packing.expand_2of4)."""
    batch = a.shape[:-2]
    p = np.arange(16)
    values = _signed(_field(a, p // 8, 4 * (p % 8)) & 0xF, 4)  # (…, 32, 16)
    sel = (index.astype(np.int64)[..., None] >> (4 * (p // 2) + 2 * (p % 2))) & 3
    k = 32 * (LANES[:, None] // 16) + 4 * (p // 2) + sel
    a_full = np.zeros((*batch, 16, 64), np.int64)
    idx = np.indices(values.shape)
    np.add.at(a_full, (*idx[:-2], np.broadcast_to((LANES % 16)[:, None], values.shape), k), values)
    e = np.arange(32)
    b_vals = _signed(_field(b, e // 8, 4 * (e % 8)) & 0xF, 4)  # (…, 32 lanes, 32)
    b_full = np.zeros((*batch, 64, 16), np.int64)
    b_full[..., 32 * (LANES[:, None] // 16) + e[None], (LANES % 16)[:, None]] = b_vals
    return _d_to_regs(a_full @ b_full + _regs_to_c(c))


def wmma_i32_16x16x16_iu8(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A·B + C for signed int8 A and B; a, b (…, 32, 2) uint32, c/d (…, 32, 8) int32.

    A: lane L holds row i = L mod 16, k = 8·⌊L/16⌋ + 4·VGPR + byte; B likewise with column j."""
    e = np.arange(8)
    k = 8 * (LANES[:, None] // 16) + e[None]
    a_full = np.zeros((*a.shape[:-2], 16, 16), np.int64)
    b_full = np.zeros((*b.shape[:-2], 16, 16), np.int64)
    a_full[..., (LANES % 16)[:, None], k] = _signed(_field(a, e // 4, 8 * (e % 4)) & 0xFF, 8)
    b_full[..., k, (LANES % 16)[:, None]] = _signed(_field(b, e // 4, 8 * (e % 4)) & 0xFF, 8)
    return _d_to_regs(a_full @ b_full + _regs_to_c(c))


def emulate(variant: str, inputs: dict[str, np.ndarray], shape: dict[str, int]) -> np.ndarray:
    """The kernel's loop, wave by wave, through the instruction model: each lane loads what prefill.h loads."""
    m, n, k = _check(variant, inputs, shape)
    step = packing.K_STEP[variant]
    i, kb = LANES % 16, LANES // 16
    f0 = np.arange(0, n, 16)[:, None, None]  # every wave's feature base (blockIdx.x · waves + threadIdx.y) · 16
    t0 = np.arange(0, m, 16)[None, :, None]  # every wave's token base blockIdx.y · 16
    acc = np.zeros((n // 16, m // 16, 32, 8), np.int32)
    if variant == "sparse_w4a4":
        vals = inputs["w_vals"].reshape(-1)
        idx, x = inputs["w_idx"].reshape(-1), inputs["x"].reshape(-1)
    else:
        vals, x = inputs["w"].view(np.uint32).reshape(-1), inputs["x"].view(np.uint32).reshape(-1)
    for s in range(k // step):
        if variant == "sparse_w4a4":
            a_at = (f0 + i) * (k // 16) + (2 * s + kb) * 2  # uint2 from w_vals
            b_at = (t0 + i) * (k // 8) + (2 * s + kb) * 4  # uint4 from x
            idx_at = (f0 + i) * (k // 32) + 2 * s + kb
            a = np.broadcast_to(np.stack([vals[a_at], vals[a_at + 1]], -1), (*acc.shape[:-1], 2))
            b = np.broadcast_to(np.stack([x[b_at + r] for r in range(4)], -1), (*acc.shape[:-1], 4))
            acc = swmmac_i32_16x16x64_iu4(a, b, acc, np.broadcast_to(idx[idx_at], acc.shape[:-1]))
        else:
            a_at = ((f0 + i) * k + 16 * s + 8 * kb) // 4  # uint2 from w (bytes → words)
            b_at = ((t0 + i) * k + 16 * s + 8 * kb) // 4
            a = np.broadcast_to(np.stack([vals[a_at], vals[a_at + 1]], -1), (*acc.shape[:-1], 2))
            b = np.broadcast_to(np.stack([x[b_at], x[b_at + 1]], -1), (*acc.shape[:-1], 2))
            acc = wmma_i32_16x16x16_iu8(a, b, acc)
    # Store: lane L writes y[t0 + L mod 16, f0 + 8·⌊L/16⌋ + r] = its VGPR r.
    y = np.zeros((m, n), np.int32)
    rows = (t0 + i)[..., None]
    cols = (f0 + 8 * kb)[..., None] + np.arange(8)
    y[np.broadcast_to(rows, acc.shape), np.broadcast_to(cols, acc.shape)] = acc
    return y
