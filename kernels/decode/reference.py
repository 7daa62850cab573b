"""References of the decode GEMV variants, y[m, n] = Σ_k dequant(w)[n, k] · x[m, k], plus the fp32 product.

Each reproduces its kernel's arithmetic up to the order of the fp32 accumulation:

* w4a16: the weight dequantized to fp16 (fl16(q · s), as weight-only kernels do), then products
  with the fp16 activations, each exact in fp32, summed; here summed in float64.
* w4a8 / w4a4: per (row, group) an exact integer dot of the codes (int32 on the device; here
  float64 BLAS, exact because every partial sum is below 2^53), then fl32(fl32(isum · s_w) · s_x)
  per group, summed over groups.

The inputs are checked first (dtypes, shapes, group, launch geometry), so a bad shape fails with
a clear message before any kernel launch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("hyperloom_decode_packing", Path(__file__).with_name("packing.py"))
packing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(packing)

ROWS_PER_STEP = 2048  # rows dequantized at a time: bounds the float64 temporaries to ~70 MB at k = 4096


def _check(inputs: dict[str, np.ndarray], shape: dict[str, int], x_dtype: str, x_cols: int) -> tuple[int, int, int, int]:
    m, n, k, group = (int(shape[key]) for key in ("m", "n", "k", "group"))
    packing.check_group(k, group)
    packing.check_launch(shape)
    packing.check_array("w", inputs["w"], "uint32", (n, k // 8))
    packing.check_array("w_scales", inputs["w_scales"], "float16", (n, k // group))
    packing.check_array("x" if x_dtype == "float16" else "x_q", inputs["x" if x_dtype == "float16" else "x_q"], x_dtype, (m, x_cols))
    if "x_scales" in inputs:
        packing.check_array("x_scales", inputs["x_scales"], "float32", (m, k // group))
    return m, n, k, group


def w4a16(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    m, n, k, group = _check(inputs, shape, "float16", shape["k"])
    return {"y": _fl16_gemv(lambda r0, r1: packing.unpack_int4(inputs["w"][r0:r1]), inputs["w_scales"], inputs["x"], group)}


def w4a16_tiled(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """w4a16 with weights and scales in the tensor-core tile layout (packing.tile_int4_for_mma, tile_scales_for_mma)."""
    m, n, k, group = (int(shape[key]) for key in ("m", "n", "k", "group"))
    packing.check_group(k, group)
    packing.check_mma_k(k)
    tiles = packing.mma_tiles(n)
    packing.check_array("w", inputs["w"], "uint32", (tiles, k // packing.MMA_BLOCK_K, 4 * packing.MMA_LANES))
    packing.check_array("w_scales", inputs["w_scales"], "float16", (tiles, k // group, packing.MMA_TILE_ROWS))
    packing.check_array("x", inputs["x"], "float16", (m, k))
    q = packing.untile_int4_for_mma(inputs["w"], n)
    return {"y": _fl16_gemv(lambda r0, r1: q[r0:r1], packing.untile_scales_for_mma(inputs["w_scales"], n), inputs["x"], group)}


def w4a16_grouped(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """w4a16 with weights in grouped tiles (packing.group_tiles: G tiles' blocks side by side, G = w's third axis)
    and scales in the tile layout padded to whole groups (packing.pad_tiles): ungrouped, then w4a16_tiled."""
    n, k, group = (int(shape[key]) for key in ("n", "k", "group"))
    packing.check_group(k, group)
    packing.check_mma_k(k)
    tiles, w = packing.mma_tiles(n), inputs["w"]
    per_group = max(w.shape[2], 1) if w.ndim == 4 else 1  # a w of another rank fails the check below, naming its shape
    groups = -(-tiles // per_group)
    packing.check_array("w", w, "uint32", (groups, k // packing.MMA_BLOCK_K, per_group, 4 * packing.MMA_LANES))
    packing.check_array("w_scales", inputs["w_scales"], "float16", (groups * per_group, k // group, packing.MMA_TILE_ROWS))
    return w4a16_tiled({**inputs, "w": packing.ungroup_tiles(w, tiles), "w_scales": inputs["w_scales"][:tiles]}, shape)


def _fl16_gemv(codes, w_scales: np.ndarray, x: np.ndarray, group: int) -> np.ndarray:
    """y = x · fl16(q · s)ᵀ in float64, rows taken ROWS_PER_STEP at a time; codes(r0, r1) gives the int4 values of rows r0..r1."""
    n = w_scales.shape[0]
    x64 = x.astype(np.float64)
    y = np.empty((x.shape[0], n), dtype=np.float64)
    for r0 in range(0, n, ROWS_PER_STEP):
        r1 = min(r0 + ROWS_PER_STEP, n)
        q = codes(r0, r1).astype(np.float32).reshape(r1 - r0, -1, group)
        # q · s is exact in float32 (a 4-bit by 11-bit product); one rounding to float16 then gives the
        # device's fl16(q · s), as numpy's float16 multiply would, several times faster.
        w16 = (q * w_scales[r0:r1, :, None].astype(np.float32)).astype(np.float16)
        y[:, r0:r1] = x64 @ w16.reshape(r1 - r0, -1).astype(np.float64).T
    return y.astype(np.float32)


def _grouped(inputs: dict[str, np.ndarray], codes_x: np.ndarray, m: int, n: int, k: int, group: int) -> dict[str, np.ndarray]:
    groups = k // group
    xg = codes_x.astype(np.float64).reshape(m, groups, group).transpose(1, 2, 0)  # (groups, group, m)
    x_scales = inputs["x_scales"].T[None]  # (1, groups, m)
    y = np.empty((m, n), dtype=np.float64)
    for r0 in range(0, n, ROWS_PER_STEP):
        q = packing.unpack_int4(inputs["w"][r0 : r0 + ROWS_PER_STEP]).astype(np.float64)
        qg = q.reshape(q.shape[0], groups, group).transpose(1, 0, 2)  # (groups, rows, group)
        isum = np.matmul(qg, xg).transpose(1, 0, 2)  # (rows, groups, m): exact integers
        s_w = inputs["w_scales"][r0 : r0 + ROWS_PER_STEP].astype(np.float32)[..., None]
        terms = (isum.astype(np.float32) * s_w) * x_scales  # fl32(fl32(isum · s_w) · s_x)
        y[:, r0 : r0 + ROWS_PER_STEP] = terms.astype(np.float64).sum(axis=1).T
    return {"y": y.astype(np.float32)}


def w4a8(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    m, n, k, group = _check(inputs, shape, "int8", shape["k"])
    return _grouped(inputs, inputs["x_q"], m, n, k, group)


def w4a4(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    m, n, k, group = _check(inputs, shape, "uint32", shape["k"] // 8)
    return _grouped(inputs, packing.unpack_int4(inputs["x_q"]), m, n, k, group)


def fp32_product(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The unquantized product y = x · wᵀ in fp32 (float64 accumulation), the yardstick of quantization error."""
    return (np.asarray(x, np.float64) @ np.asarray(w, np.float64).T).astype(np.float32)


def quantization_error(w: np.ndarray, x: np.ndarray, group: int) -> dict[str, float]:
    """Each variant's relative error ‖y_variant − y_fp32‖ / ‖y_fp32‖ on float weights (n, k) and activations (m, k)."""
    m, k = x.shape
    n = w.shape[0]
    shape = {"m": m, "n": n, "k": k, "group": group, "threads": 4, "rows": 8}
    packed, w_scales = packing.quantize_weights(w, group)
    exact = fp32_product(w, x).astype(np.float64)
    x8, s8 = packing.quantize_groups(x, group, packing.INT8_MAX, np.float32)
    x4, s4 = packing.quantize_groups(x, group, packing.INT4_MAX, np.float32)
    outputs = {
        "w4a16": w4a16({"w": packed, "w_scales": w_scales, "x": x.astype(np.float16)}, shape),
        "w4a8": w4a8({"w": packed, "w_scales": w_scales, "x_q": x8, "x_scales": s8}, shape),
        "w4a4": w4a4({"w": packed, "w_scales": w_scales, "x_q": packing.pack_int4(x4), "x_scales": s4}, shape),
    }
    norm = float(np.linalg.norm(exact)) or 1.0
    return {name: float(np.linalg.norm(out["y"] - exact)) / norm for name, out in outputs.items()}
