"""Host-side layout of the prefill GEMM operands: 2:4 compression, sparsity indices, nibble order.

The one place these layouts are defined (prefill.h and the two kernels read them back). The GEMM is
y[m, n] = x[m, k] · w[n, k]ᵀ with int32 results: w (weights) is the instruction's A operand (rows
i = output features), x (activations) its B operand (columns j = tokens).

Source of the register layouts: ROCm/amd_matrix_instruction_calculator, matrix_calculator.py
(version 1.3.2, commit 2ef9189), `--architecture rdna4 --instruction v_swmmac_i32_16x16x64_iu4
--detail-instruction` and `--instruction v_wmma_i32_16x16x16_iu8 --detail-instruction`, section
"Wave32 matrix element to register mapping with no modifiers". AMD's calculator is the register-level
companion of the "AMD RDNA4 Instruction Set Architecture" guide's WMMA/SWMMAC sections; the guide's
own text was not reachable from this repository's sources, so those sections are not quoted here.

v_swmmac_i32_16x16x64_iu4, wave32 (A is 16×64 logical, 2:4 sparse, stored 16×32):
  A[i][k]           lane 16·⌊k/32⌋ + i, VGPR ⌊k/16⌋ mod 2, bits [8·(⌊k/4⌋ mod 4) + 7 : 8·(⌊k/4⌋ mod 4)]
  compression[i][k] lane 16·⌊k/32⌋ + i, index VGPR bits [4·(⌊k/4⌋ mod 8) + 3 : 4·(⌊k/4⌋ mod 8)]
  B[k][j]           lane 16·⌊k/32⌋ + j, VGPR ⌊k/8⌋ mod 4, bits [4·(k mod 8) + 3 : 4·(k mod 8)]
  D[i][j]           lane 16·⌊i/8⌋ + j, VGPR i mod 8
So each group of 4 logical k (one 2:4 block) has one byte of A (two stored int4 values) and one
4-bit index field; the calculator describes the field as "2 bits for each actually-stored entry:
which of the four values is stored in the first location, and which in the second". We read
"first location" as the byte's low nibble and its selector as the field's low 2 bits (bits [1:0]),
the second as the high nibble and bits [3:2]. The calculator does not spell that order out, no run
on RDNA4 hardware has checked it here, and it is the one assumption of this layout.
The 32-bit index needs no index_key set choice: llvm-mc-19 rejects index_key on this opcode (wave32).

Consequence for memory, chosen so every lane's operands are one contiguous load:
  * x (B) is int4 in natural nibble order: word w of a row holds k = 8w .. 8w+7, k = 8w+e in
    bits [4e+3 : 4e]; a lane's 32 k are 4 consecutive words (one 16-byte load).
  * w is compressed to k/2 values per row (two per block of 4, in increasing k), packed in the same
    natural nibble order: a lane's 16 stored values are 2 consecutive words (one 8-byte load).
  * the index is one uint32 per row and 32 k: block b (k = 4b .. 4b+3) at bits [4(b mod 8)+3 : 4(b mod 8)],
    the first stored value's position (0..3 within the block) in the low 2 bits, the second's above.
    Note this is not the decode kernels' nibble order (kernels/decode/packing.py NIBBLE_K).

v_wmma_i32_16x16x16_iu8, wave32 (the dense baseline), same calculator section:
  A[i][k] lane 16·⌊k/8⌋ + i, VGPR ⌊k/4⌋ mod 2, byte k mod 4;  B[k][j] lane 16·⌊k/8⌋ + j, same;
  D as above. So int8 w and x in plain row-major order give each lane 8 consecutive bytes.
"""

from __future__ import annotations

import numpy as np

from hyperloom.core.errors import HyperloomError

INT4_MIN, INT4_MAX = -8, 7
WAVE = 32  # lanes: both kernels are wave32
TILE = 16  # output tile per wave: 16 features × 16 tokens
K_STEP = {"sparse_w4a4": 64, "dense_w8a8": 16}  # logical k per instruction
MAX_WAVES = 8  # waves per block (prefill.h's HL_MAX_WAVES)
# The six 2-of-4 selections as index fields: first position in bits [1:0], second in bits [3:2].
CANONICAL_FIELDS = tuple(p0 | p1 << 2 for p0 in range(4) for p1 in range(p0 + 1, 4))


def _check_ints(name: str, a: np.ndarray, low: int, high: int) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise HyperloomError(f"{name} must hold integers, got dtype {a.dtype}", "round and cast to an integer dtype first")
    if a.size and (a.min() < low or a.max() > high):
        raise HyperloomError(f"{name} values lie in [{low}, {high}], got [{a.min()}, {a.max()}]", "clip or requantize the values")
    return a


def pack_int4(q: np.ndarray) -> np.ndarray:
    """int values in [-8, 7], shape (..., k) with k % 8 == 0 → uint32 words (..., k // 8), natural nibble order."""
    q = _check_ints("int4 data", q, INT4_MIN, INT4_MAX)
    if q.shape[-1] % 8:
        raise HyperloomError(f"int4 packing needs the last dimension a multiple of 8, got {q.shape[-1]}", "pad k to a multiple of 8")
    nibbles = (q.astype(np.int64) & 0xF).reshape(*q.shape[:-1], -1, 8)
    return (nibbles << (4 * np.arange(8))).sum(axis=-1).astype(np.uint32)


def unpack_int4(words: np.ndarray) -> np.ndarray:
    """uint32 words (..., w) in natural nibble order → int8 values (..., 8w) in [-8, 7]."""
    words = np.asarray(words)
    if words.dtype != np.uint32:
        raise HyperloomError(f"packed int4 data are uint32 words, got dtype {words.dtype}", "pack them with pack_int4")
    nibbles = ((words[..., None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF).astype(np.int8)
    return np.where(nibbles > INT4_MAX, nibbles - 16, nibbles).astype(np.int8).reshape(*words.shape[:-1], -1)


def prune_2of4(w: np.ndarray) -> np.ndarray:
    """Keep the two largest |values| of every block of 4 along the last axis (ties: the earlier), zero the rest."""
    w = np.asarray(w)
    if w.shape[-1] % 4:
        raise HyperloomError(f"2:4 pruning needs the last dimension a multiple of 4, got {w.shape[-1]}", "pad k to a multiple of 4")
    blocks = w.reshape(*w.shape[:-1], -1, 4)
    order = np.argsort(-np.abs(blocks), axis=-1, kind="stable")[..., :2]
    keep = np.zeros(blocks.shape, bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return np.where(keep, blocks, 0).reshape(w.shape)


def compress_2of4(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 2:4-sparse int4 matrix (n, k) → (values uint32 (n, k // 16), index uint32 (n, k // 32)).

    Every block of 4 along k must hold at most 2 nonzeros. The stored pair is the block's nonzeros in
    increasing k; a block with fewer than 2 fills the remaining slots with zeros at unused positions,
    so the selections stay distinct and increasing (one of CANONICAL_FIELDS)."""
    w = _check_ints("2:4 weights", w, INT4_MIN, INT4_MAX)
    if w.ndim != 2 or w.shape[1] % 32:
        raise HyperloomError(f"2:4 compression takes a matrix (n, k) with k a multiple of 32, got shape {w.shape}",
                             "pad k to a multiple of 32")
    blocks = w.astype(np.int8).reshape(w.shape[0], -1, 4)
    nonzero = blocks != 0
    counts = nonzero.sum(axis=-1)
    if (counts > 2).any():
        row, block = np.argwhere(counts > 2)[0]
        raise HyperloomError(
            f"weights are not 2:4 sparse: row {row}, k {4 * block}..{4 * block + 3} holds {counts[row, block]} nonzeros "
            f"({blocks[row, block].tolist()})",
            "prune with prune_2of4 first: at most 2 nonzeros in every block of 4 along k",
        )
    # Positions sorted with the nonzeros first, each group in increasing k; the first two are kept.
    rank = np.where(nonzero, 0, 4) + np.arange(4)
    pos = np.sort(np.argsort(rank, axis=-1, kind="stable")[..., :2], axis=-1)
    values = np.take_along_axis(blocks, pos, axis=-1).reshape(w.shape[0], -1)
    fields = (pos[..., 0] | pos[..., 1] << 2).astype(np.int64).reshape(w.shape[0], -1, 8)
    index = (fields << (4 * np.arange(8))).sum(axis=-1).astype(np.uint32)
    return pack_int4(values), index


def index_fields(index: np.ndarray) -> np.ndarray:
    """uint32 index words (n, k // 32) → 4-bit fields (n, k // 4), block b of a row at position b."""
    index = np.asarray(index)
    if index.dtype != np.uint32:
        raise HyperloomError(f"sparsity indices are uint32 words, got dtype {index.dtype}", "build them with compress_2of4")
    return ((index[..., None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF).reshape(*index.shape[:-1], -1)


def expand_2of4(values: np.ndarray, index: np.ndarray, canonical: bool = True) -> np.ndarray:
    """(values, index) → the logical int matrix (n, k), each stored value placed at its selected position.

    canonical=True (decompression) refuses a field that is not one of the six 2-of-4 selections.
    canonical=False is the instruction model's reading: each stored value multiplies the B row its 2-bit
    selector names, so two selectors naming one position add up there. That reading of a repeated
    selector follows the calculator's per-entry definition of the index and is unverified on hardware."""
    stored = unpack_int4(values).astype(np.int64)
    fields = index_fields(index)
    n, blocks = fields.shape
    if stored.shape != (n, 2 * blocks):
        raise HyperloomError(f"values hold {stored.shape[-1]} int4 per row but the index describes {blocks} blocks of 4 (needs "
                             f"{2 * blocks})",
                             "pass values and index from one compress_2of4 call")
    if canonical and not np.isin(fields, CANONICAL_FIELDS).all():
        row, block = np.argwhere(~np.isin(fields, CANONICAL_FIELDS))[0]
        raise HyperloomError(f"index field {int(fields[row, block]):#x} at row {row}, block {block} is not a 2-of-4 selection (two "
                             "distinct positions, increasing)",
                             f"use a field from {[hex(f) for f in CANONICAL_FIELDS]}")
    out = np.zeros((n, blocks, 4), np.int64)
    rows, cols = np.indices((n, blocks))
    stored = stored.reshape(n, blocks, 2)
    np.add.at(out, (rows, cols, fields & 3), stored[..., 0])
    np.add.at(out, (rows, cols, fields >> 2), stored[..., 1])
    return out.reshape(n, 4 * blocks)


def check_shape(variant: str, shape: dict[str, int]) -> tuple[int, int, int, int]:
    """The tile framework's requirements: a wave owns a 16 × 16 tile, a block `waves` tiles along n, no edge code."""
    m, n, k, waves = (int(shape.get(key, 0)) for key in ("m", "n", "k", "waves"))
    step = K_STEP[variant]
    if not 1 <= waves <= MAX_WAVES:
        raise HyperloomError(f"waves = {waves} is outside 1..{MAX_WAVES}",
                             "pick the waves per block (each owns 16 output features) in 1..8")
    problems = [f"{name} = {value} is not a positive multiple of {mult}" for name, value, mult in
                (("m", m, TILE), ("n", n, TILE * waves), ("k", k, step)) if value <= 0 or value % mult]
    if problems:
        raise HyperloomError(f"{variant}: " + "; ".join(problems) + f" (tile: 16 tokens × 16·waves features × {step} k)",
                             "pad the matrices to whole tiles; the kernels have no edge code")
    return m, n, k, waves


def check_array(name: str, array: np.ndarray, dtype: str, shape: tuple[int, ...]) -> None:
    if array.dtype != np.dtype(dtype):
        raise HyperloomError(f"{name} has dtype {array.dtype}, expected {dtype}", f"convert {name} to {dtype}")
    if array.shape != shape:
        raise HyperloomError(f"{name} has shape {array.shape}, expected {shape}", f"check {name} against m, n and k")
