"""Host-side layout of the decode GEMV operands: int4 nibble order, per-group scales, quantizers.

The one place the nibble order is defined (decode.h's `nibble` reads it back on the device):
a uint32 word j of a row holds k = 8j .. 8j+7, and byte b of the word (little-endian) holds
k = 8j+b in its low nibble and k = 8j+4+b in its high nibble. So `(w << 4) & 0xF0F0F0F0`
gives the int8 lanes of k = 8j..8j+3 (times 16) and `w & 0xF0F0F0F0` those of 8j+4..8j+7,
both ready for a 4-way int8 dot against activations in their natural order; the int4 dot8
pairs nibble i with nibble i, so activations packed in this same order need no shuffle.
Values are signed two's complement int4 in [-8, 7], symmetric (no zero point).

Scales: one per (row, group of `group` consecutive k), shape (rows, k // group); the
weights' are float16, the activations' float32 (per batch row and group).
"""

from __future__ import annotations

import numpy as np

from hyperloom.core.errors import HyperloomError

NIBBLES_PER_WORD = 8
NIBBLE_K = (0, 4, 1, 5, 2, 6, 3, 7)  # k offset (within the word's 8) held by nibble i (bits 4i..4i+3)
INT4_MIN, INT4_MAX = -8, 7
INT8_MAX = 127
CHUNK_K = 32  # k per lane per step on the device (one 16-byte load of weights); group must be a multiple
GROUPS = (32, 64, 128, 256)
MAX_THREADS = 256  # threads per block: decode.h's HL_MAX_THREADS


def pack_int4(q: np.ndarray) -> np.ndarray:
    """int values in [-8, 7], shape (..., k) with k % 8 == 0 → uint32 words (..., k // 8) in NIBBLE_K order."""
    q = np.asarray(q)
    if q.dtype.kind not in "iu":
        raise HyperloomError(f"int4 packing takes integers, got dtype {q.dtype}", "round and cast to an integer dtype first")
    if q.shape[-1] % NIBBLES_PER_WORD:
        raise HyperloomError(f"int4 packing needs the last dimension a multiple of 8, got {q.shape[-1]}", "pad k to a multiple of 8")
    if q.size and (q.min() < INT4_MIN or q.max() > INT4_MAX):
        raise HyperloomError(f"int4 values lie in [-8, 7], got [{q.min()}, {q.max()}]", "clip or requantize the values")
    nibbles = (q.astype(np.int64) & 0xF).reshape(*q.shape[:-1], -1, NIBBLES_PER_WORD)
    words = np.zeros(nibbles.shape[:-1], dtype=np.uint32)
    for i, k in enumerate(NIBBLE_K):
        words |= (nibbles[..., k] << (4 * i)).astype(np.uint32)
    return words


def unpack_int4(words: np.ndarray) -> np.ndarray:
    """uint32 words (..., k // 8) in NIBBLE_K order → int8 values (..., k) in [-8, 7]."""
    words = np.asarray(words)
    if words.dtype != np.uint32:
        raise HyperloomError(f"packed int4 weights are uint32 words, got dtype {words.dtype}", "pack them with pack_int4")
    out = np.empty((*words.shape, NIBBLES_PER_WORD), dtype=np.int8)
    for i, k in enumerate(NIBBLE_K):
        nibble = ((words >> np.uint32(4 * i)) & np.uint32(0xF)).astype(np.int8)
        out[..., k] = np.where(nibble > INT4_MAX, nibble - 16, nibble)
    return out.reshape(*words.shape[:-1], -1)


def quantize_groups(a: np.ndarray, group: int, q_max: int, scale_dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-group quantization along the last axis: codes in [-q_max, q_max] and scales (..., k // group)."""
    a = np.asarray(a, dtype=np.float32)
    check_group(a.shape[-1], group)
    blocks = a.reshape(*a.shape[:-1], -1, group)
    scales = (np.abs(blocks).max(axis=-1) / q_max).astype(scale_dtype)
    divisor = np.where(scales > 0, scales, 1).astype(np.float32)[..., None]
    codes = np.clip(np.rint(blocks / divisor), -q_max, q_max).astype(np.int8)
    return codes.reshape(a.shape), scales


def quantize_weights(w: np.ndarray, group: int) -> tuple[np.ndarray, np.ndarray]:
    """float weights (n, k) → packed uint32 (n, k // 8) and float16 scales (n, k // group); codes in [-7, 7]."""
    codes, scales = quantize_groups(w, group, INT4_MAX, np.float16)
    return pack_int4(codes), scales


def check_group(k: int, group: int) -> None:
    if group not in GROUPS:
        raise HyperloomError(f"group size {group} is not supported", f"use one of {list(GROUPS)}")
    if k % group:
        raise HyperloomError(f"k = {k} is not a multiple of the group size {group}",
                             f"pad k to a multiple of {group}, or pick a group that divides it")


def check_launch(shape: dict[str, int]) -> None:
    """The geometry the kernels assume: a power-of-two row team of ≥ 4 lanes (a group's lanes reduce by shuffles)."""
    threads, rows = shape.get("threads", 0), shape.get("rows", 0)
    if threads < 4 or threads & (threads - 1) or rows < 1 or threads * rows > MAX_THREADS or (threads * rows) % 32:
        raise HyperloomError(
            f"threads = {threads}, rows = {rows} is not a valid decode launch",
            f"use a power of two of at least 4 for threads, and rows so that threads · rows is a multiple of 32 (whole"
            f" warps: NVIDIA shuffles take a full mask) and at most {MAX_THREADS}",
        )
    if not 1 <= shape.get("m", 0) <= 8:
        raise HyperloomError(f"batch m = {shape.get('m')} is outside 1..8", "the decode kernels take batch 1 to 8; use a GEMM for more")


def check_array(name: str, array: np.ndarray, dtype: str, shape: tuple[int, ...]) -> None:
    if array.dtype != np.dtype(dtype):
        raise HyperloomError(f"{name} has dtype {array.dtype}, expected {dtype}", f"convert {name} to {dtype}")
    if array.shape != shape:
        raise HyperloomError(f"{name} has shape {array.shape}, expected {shape}", f"check {name} against n, k, m and the group size")


# The tensor-core tile layout (w4a16_tiled.cu): weights re-laid out once, as Marlin and torch's
# _convert_weight_to_int4pack do, so that a warp's 16-byte-per-lane load is one contiguous 512-byte
# block holding each lane's mma.m16n8k16 fragments. A block covers a tile of 16 rows and 64 k. Lane
# l = 4g + q holds rows g and g + 8 of the tile at k = 16q .. 16q + 15 (activations: one contiguous
# 32-byte load); word j of the lane covers k = 16q + 4j + r, r = 0..3, of both rows, nibble i holding
# (row offset, r) = MMA_NIBBLES[i], so one shift and four LOP3 give the fragment registers a0..a3 in order.
MMA_TILE_ROWS = 16
MMA_BLOCK_K = 64
MMA_LANES = 32
MMA_NIBBLES = ((0, 0), (8, 0), (0, 2), (8, 2), (0, 1), (8, 1), (0, 3), (8, 3))


def mma_tiles(n: int) -> int:
    return -(-n // MMA_TILE_ROWS)


def check_mma_k(k: int) -> None:
    if k % MMA_BLOCK_K:
        raise HyperloomError(f"the tensor-core tile layout needs k a multiple of {MMA_BLOCK_K}, got {k}",
                             f"pad k to a multiple of {MMA_BLOCK_K}")


def tile_int4_for_mma(q: np.ndarray) -> np.ndarray:
    """int values in [-8, 7], shape (n, k) → uint32 words (ceil(n / 16), k // 64, 128) in the tile layout; rows past n are 0."""
    q = np.asarray(q)
    n, k = q.shape
    check_mma_k(k)
    if q.size and (q.min() < INT4_MIN or q.max() > INT4_MAX):
        raise HyperloomError(f"int4 values lie in [-8, 7], got [{q.min()}, {q.max()}]", "clip or requantize the values")
    tiles = mma_tiles(n)
    padded = np.zeros((tiles * MMA_TILE_ROWS, k), dtype=np.int64)
    padded[:n] = q.astype(np.int64) & 0xF
    # (tile, h, g, block, q, j, r): row = 16 tile + 8 h + g, k = 64 block + 16 q + 4 j + r
    blocks = padded.reshape(tiles, 2, 8, k // MMA_BLOCK_K, 4, 4, 4)
    words = np.zeros((tiles, 8, k // MMA_BLOCK_K, 4, 4), dtype=np.uint32)
    for i, (row_offset, r) in enumerate(MMA_NIBBLES):
        words |= (blocks[:, row_offset // 8, :, :, :, :, r] << (4 * i)).astype(np.uint32)
    return np.ascontiguousarray(words.transpose(0, 2, 1, 3, 4)).reshape(tiles, k // MMA_BLOCK_K, MMA_LANES * 4)


def untile_int4_for_mma(words: np.ndarray, n: int) -> np.ndarray:
    """uint32 words (ceil(n / 16), k // 64, 128) in the tile layout → int8 values (n, k) in [-8, 7]."""
    words = np.asarray(words)
    if words.dtype != np.uint32 or words.ndim != 3 or words.shape[2] != MMA_LANES * 4 or words.shape[0] != mma_tiles(n):
        raise HyperloomError(f"tiled int4 weights are uint32 ({mma_tiles(n)}, k // 64, 128) for n = {n}, got {words.dtype} {words.shape}",
                             "tile them with tile_int4_for_mma")
    tiles, kblocks = words.shape[:2]
    lanes = words.reshape(tiles, kblocks, 8, 4, 4).transpose(0, 2, 1, 3, 4)  # (tile, g, block, q, j)
    out = np.empty((tiles, 2, 8, kblocks, 4, 4, 4), dtype=np.int8)
    for i, (row_offset, r) in enumerate(MMA_NIBBLES):
        nibble = ((lanes >> np.uint32(4 * i)) & np.uint32(0xF)).astype(np.int8)
        out[:, row_offset // 8, :, :, :, :, r] = np.where(nibble > INT4_MAX, nibble - 16, nibble)
    return out.reshape(tiles * MMA_TILE_ROWS, kblocks * MMA_BLOCK_K)[:n]


def tile_scales_for_mma(scales: np.ndarray) -> np.ndarray:
    """Per-group scales (n, groups) → (ceil(n / 16), groups, 16) with [t, G, 2g + h] the scale of row 16t + 8h + g:
    a lane's rows g and g + 8 as one half2. Rows past n get scale 0."""
    scales = np.asarray(scales)
    n, groups = scales.shape
    tiles = mma_tiles(n)
    padded = np.zeros((tiles * MMA_TILE_ROWS, groups), dtype=scales.dtype)
    padded[:n] = scales
    return np.ascontiguousarray(padded.reshape(tiles, 2, 8, groups).transpose(0, 3, 2, 1)).reshape(tiles, groups, MMA_TILE_ROWS)


def untile_scales_for_mma(tiled: np.ndarray, n: int) -> np.ndarray:
    """(ceil(n / 16), groups, 16) in the tile layout → per-group scales (n, groups)."""
    tiled = np.asarray(tiled)
    if tiled.ndim != 3 or tiled.shape[0] != mma_tiles(n) or tiled.shape[2] != MMA_TILE_ROWS:
        raise HyperloomError(f"tiled scales are ({mma_tiles(n)}, groups, 16) for n = {n}, got {tiled.shape}",
                             "tile them with tile_scales_for_mma")
    tiles, groups = tiled.shape[:2]
    return tiled.reshape(tiles, groups, 8, 2).transpose(0, 3, 2, 1).reshape(tiles * MMA_TILE_ROWS, groups)[:n]


# Grouped tiles (w4a16_tiled.cu with HL_TILE_GROUP = G): the tile layout with G tiles' blocks at one k side by
# side, (ceil(tiles / G), k // 64, G, 128) words, so a warp that takes G tiles at once reads G · 512 contiguous
# bytes a block instead of G blocks 512 bytes each, a tile's k range apart. Tiles past the last are zeros.
def group_tiles(words: np.ndarray, group: int) -> np.ndarray:
    """(tiles, k // 64, 128) tile-layout words → (ceil(tiles / group), k // 64, group, 128)."""
    words = np.asarray(words)
    if words.ndim != 3 or words.shape[2] != MMA_LANES * 4 or group < 1:
        raise HyperloomError(f"tile-layout words are (tiles, k // 64, 128) and the group at least 1, got {words.shape} and {group}",
                             "tile them with tile_int4_for_mma first")
    tiles, kblocks = words.shape[:2]
    padded = np.zeros((-(-tiles // group) * group, kblocks, MMA_LANES * 4), dtype=words.dtype)
    padded[:tiles] = words
    return np.ascontiguousarray(padded.reshape(-1, group, kblocks, MMA_LANES * 4).transpose(0, 2, 1, 3))


def ungroup_tiles(grouped: np.ndarray, tiles: int) -> np.ndarray:
    """(ceil(tiles / G), k // 64, G, 128) grouped words → the first `tiles` tiles, (tiles, k // 64, 128)."""
    grouped = np.asarray(grouped)
    if grouped.ndim != 4 or grouped.shape[3] != MMA_LANES * 4 or grouped.shape[0] != -(-tiles // max(grouped.shape[2], 1)):
        raise HyperloomError(f"grouped tile words are (ceil({tiles} / G), k // 64, G, 128), got {grouped.shape}",
                             "group them with group_tiles")
    groups, kblocks, group = grouped.shape[:3]
    return grouped.transpose(0, 2, 1, 3).reshape(groups * group, kblocks, MMA_LANES * 4)[:tiles]


def pad_tiles(tiled: np.ndarray, group: int) -> np.ndarray:
    """Tile-layout scales (tiles, groups, 16) with zero tiles appended up to a multiple of `group`."""
    tiled = np.asarray(tiled)
    padded = np.zeros((-(-tiled.shape[0] // group) * group, *tiled.shape[1:]), dtype=tiled.dtype)
    padded[: tiled.shape[0]] = tiled
    return padded
