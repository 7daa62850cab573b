"""kernels/prefill: 2:4 compression and index packing, the SWMMAC and WMMA instruction models, the kernels' loads, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import REPO
from kernel_modules import kernel_module
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.kernelspec.load import draw_inputs
from helpers import loaded_spec, reference_of

packing = kernel_module("prefill", "packing")
reference = kernel_module("prefill", "reference")


def sparse_int4(rng, n, k, density=0.9):
    """Random int4 (n, k), pruned to 2:4, with some blocks left with one or no nonzero."""
    w = rng.integers(-8, 8, size=(n, k)) * (rng.random((n, k)) < density)
    return packing.prune_2of4(w)


def sparse_inputs(rng, m, n, k):
    w = sparse_int4(rng, n, k)
    x = rng.integers(-8, 8, size=(m, k))
    w_vals, w_idx = packing.compress_2of4(w)
    return w, x, {"w_vals": w_vals, "w_idx": w_idx, "x": packing.pack_int4(x)}


# --- host packing ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("positions", "field"), [((0, 1), 0x4), ((0, 3), 0xC), ((1, 2), 0x9), ((1, 3), 0xD), ((2, 3), 0xE), ((0, 2), 0x8)])
@pytest.mark.parametrize("block", [0, 5, 7, 8, 15])
def test_each_block_stores_its_two_values_in_one_byte_and_their_positions_in_its_index_field(positions, field, block):
    w = np.zeros((1, 64), np.int8)
    w[0, 4 * block + positions[0]], w[0, 4 * block + positions[1]] = -3, 5  # 0xD, 0x5
    values, index = packing.compress_2of4(w)
    assert values.shape == (1, 4) and index.shape == (1, 2)
    word, byte = divmod(block, 4)  # values: block b is byte b of the compressed row (low nibble first)
    assert int(values[0, word]) == (0x5D << (8 * byte))
    assert np.all(np.delete(values[0], word) == 0)
    word, nibble = divmod(block, 8)  # index: block b is the 4-bit field b, first position in its low 2 bits
    fields_of_empty_blocks = 0x44444444 & ~(0xF << (4 * nibble))  # an empty block keeps positions 0 and 1
    assert int(index[0, word]) == fields_of_empty_blocks | field << (4 * nibble)
    assert packing.expand_2of4(values, index).tolist() == w.tolist()


def test_compression_round_trips_to_the_pruned_matrix_with_blocks_of_two_one_and_no_nonzeros():
    rng = np.random.default_rng(1)
    dense = rng.integers(-8, 8, size=(48, 256)) * (rng.random((48, 256)) < 0.7)
    pruned = packing.prune_2of4(dense)
    counts = (pruned.reshape(48, -1, 4) != 0).sum(-1)
    assert {0, 1, 2} <= set(np.unique(counts).tolist()) and counts.max() == 2
    values, index = packing.compress_2of4(pruned)
    assert values.dtype == np.uint32 and values.shape == (48, 16) and index.shape == (48, 8)
    assert np.array_equal(packing.expand_2of4(values, index), pruned)
    assert np.isin(packing.index_fields(index), packing.CANONICAL_FIELDS).all()


def test_pruning_keeps_the_two_largest_magnitudes_of_each_block():
    w = np.array([[1, -7, 3, 6, 0, 0, 0, 2, -8, 7, 7, 1]])
    assert packing.prune_2of4(w).tolist() == [[0, -7, 0, 6, 0, 0, 0, 2, -8, 7, 0, 0]]


@pytest.mark.parametrize("k_offset", range(8))
def test_activations_are_packed_in_natural_nibble_order(k_offset):
    q = np.zeros((1, 8), np.int8)
    q[0, k_offset] = -3
    assert int(packing.pack_int4(q)[0, 0]) == 0xD << (4 * k_offset)
    assert packing.unpack_int4(packing.pack_int4(q)).tolist() == q.tolist()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: packing.compress_2of4(np.array([[1, 2, 3, 0] + [0] * 28])), r"not 2:4 sparse: row 0, k 0\.\.3 holds 3 nonzeros"),
        (lambda: packing.compress_2of4(np.full((1, 32), 8)), r"values lie in \[-8, 7\]"),
        (lambda: packing.compress_2of4(np.zeros((1, 48), np.int8)), "multiple of 32"),
        (lambda: packing.compress_2of4(np.zeros((1, 32), np.float32)), "integers"),
        (lambda: packing.pack_int4(np.full((2, 8), -9)), r"values lie in \[-8, 7\]"),
        (lambda: packing.expand_2of4(np.zeros((1, 4), np.uint32), np.zeros((1, 2), np.uint32)),
         "index field 0x0 at row 0, block 0 is not a 2-of-4 selection"),
        (lambda: packing.expand_2of4(np.zeros((1, 2), np.uint32), np.full((1, 2), 0x44444444, np.uint32)),
         r"describes 16 blocks of 4 \(needs 32\)"),
    ],
)
def test_host_input_the_layout_cannot_represent_is_refused_by_name(call, message):
    with pytest.raises(HyperloomError, match=message):
        call()


# --- the instruction models, fed registers built from the calculator's formulas ----------------------------

def swmmac_registers(a_logical, b, rng):
    """One wave's registers for v_swmmac_i32_16x16x64_iu4, element by element from the calculator's formulas
    (packing.py docstring), independent of packing.compress_2of4 and of the model's own indexing."""
    a_regs, idx, b_regs = np.zeros((32, 2), np.int64), np.zeros(32, np.int64), np.zeros((32, 4), np.int64)
    for i in range(16):
        for block in range(16):
            k0 = 4 * block
            nonzero = [p for p in range(4) if a_logical[i, k0 + p] != 0]
            pos = sorted(nonzero + [p for p in range(4) if p not in nonzero][: 2 - len(nonzero)])
            lane = 16 * (k0 // 32) + i
            vgpr, bits = (k0 // 16) % 2, 8 * ((k0 // 4) % 4)  # A[i][k]: VGPR ⌊k/16⌋ mod 2, bits 8(⌊k/4⌋ mod 4)+7..
            for slot, p in enumerate(pos):
                a_regs[lane, vgpr] |= (int(a_logical[i, k0 + p]) & 0xF) << (bits + 4 * slot)
                idx[lane] |= p << (4 * ((k0 // 4) % 8) + 2 * slot)  # compression[i][k]: bits 4(⌊k/4⌋ mod 8)+3..
    for k in range(64):
        for j in range(16):
            b_regs[16 * (k // 32) + j, (k // 8) % 4] |= (int(b[k, j]) & 0xF) << (4 * (k % 8))  # B[k][j]
    c = rng.integers(-1000, 1000, size=(16, 16))
    c_regs = np.zeros((32, 8), np.int64)
    for i in range(16):
        for j in range(16):
            c_regs[16 * (i // 8) + j, i % 8] = c[i, j]  # C/D[i][j]: lane 16⌊i/8⌋ + j, VGPR i mod 8
    as_u32 = lambda r: r.astype(np.uint32)  # noqa: E731
    return as_u32(a_regs), as_u32(b_regs), c_regs.astype(np.int32), as_u32(idx), c


def d_matrix(d_regs):
    return np.array([[d_regs[16 * (i // 8) + j, i % 8] for j in range(16)] for i in range(16)])


@pytest.mark.parametrize("seed", range(4))
def test_the_swmmac_model_equals_a_dense_int32_matmul_on_2_of_4_sparse_int4_data(seed):
    rng = np.random.default_rng(seed)
    a = sparse_int4(rng, 16, 64, density=0.8 if seed else 1.0)
    b = rng.integers(-8, 8, size=(64, 16))
    a_regs, b_regs, c_regs, idx, c = swmmac_registers(a, b, rng)
    d = reference.swmmac_i32_16x16x64_iu4(a_regs, b_regs, c_regs, idx)
    assert d.dtype == np.int32 and d.shape == (32, 8)
    assert np.array_equal(d_matrix(d), a @ b + c)


def test_the_swmmac_model_reads_the_selector_of_the_first_stored_value_from_the_low_bits():
    rng = np.random.default_rng(9)
    a = np.zeros((16, 64), np.int64)
    a[3, 4 * 9 + 1], a[3, 4 * 9 + 2] = 2, -5  # row 3, block 9 (lane 19): positions 1 and 2
    b = rng.integers(-8, 8, size=(64, 16))
    a_regs, b_regs, c_regs, idx, c = swmmac_registers(a, b, rng)
    assert int(idx[16 + 3]) >> 4 & 0xF == 1 | 2 << 2
    good = d_matrix(reference.swmmac_i32_16x16x64_iu4(a_regs, b_regs, c_regs, idx))
    swapped = idx.copy()
    swapped[19] = (swapped[19] & ~np.uint32(0xF0)) | np.uint32((2 | 1 << 2) << 4)
    bad = d_matrix(reference.swmmac_i32_16x16x64_iu4(a_regs, b_regs, c_regs, swapped))
    assert np.array_equal(good, a @ b + c) and not np.array_equal(bad, good)


def test_the_wmma_iu8_model_equals_a_dense_int32_matmul():
    rng = np.random.default_rng(5)
    a, b = rng.integers(-128, 128, size=(16, 16)), rng.integers(-128, 128, size=(16, 16))
    a_regs, b_regs = np.zeros((32, 2), np.int64), np.zeros((32, 2), np.int64)
    for i in range(16):
        for k in range(16):  # A[i][k] / B[k][j]: lane 16⌊k/8⌋ + i, VGPR ⌊k/4⌋ mod 2, byte k mod 4
            a_regs[16 * (k // 8) + i, (k // 4) % 2] |= (int(a[i, k]) & 0xFF) << (8 * (k % 4))
            b_regs[16 * (k // 8) + i, (k // 4) % 2] |= (int(b[k, i]) & 0xFF) << (8 * (k % 4))
    c = np.zeros((32, 8), np.int32)
    d = reference.wmma_i32_16x16x16_iu8(a_regs.astype(np.uint32), b_regs.astype(np.uint32), c)
    assert np.array_equal(d_matrix(d), a @ b)


# --- the kernels' loads through the models, and the references ------------------------------------------

SHAPE = {"m": 48, "n": 64, "k": 256, "waves": 2}


def test_the_sparse_kernels_loads_through_the_swmmac_model_give_the_dense_product():
    w, x, inputs = sparse_inputs(np.random.default_rng(6), SHAPE["m"], SHAPE["n"], SHAPE["k"])
    expected = x @ w.T
    assert np.array_equal(reference.sparse_w4a4(inputs, SHAPE)["y"], expected)
    assert np.array_equal(reference.emulate("sparse_w4a4", inputs, SHAPE), expected)


def test_the_dense_kernels_loads_through_the_wmma_model_give_the_product():
    rng = np.random.default_rng(7)
    inputs = {"w": rng.integers(-128, 128, size=(64, 256)).astype(np.int8), "x": rng.integers(-128, 128, size=(48, 256)).astype(np.int8)}
    expected = inputs["x"].astype(np.int64) @ inputs["w"].astype(np.int64).T
    assert np.array_equal(reference.dense_w8a8(inputs, SHAPE)["y"], expected)
    assert np.array_equal(reference.emulate("dense_w8a8", inputs, SHAPE), expected)


def test_activations_in_the_decode_nibble_order_give_a_different_product():
    w, x, inputs = sparse_inputs(np.random.default_rng(8), 16, 32, 128)
    shape = {"m": 16, "n": 32, "k": 128, "waves": 1}
    decode_order = (0, 4, 1, 5, 2, 6, 3, 7)  # kernels/decode/packing.py NIBBLE_K: not this kernel's order
    shuffled = x.reshape(16, -1, 8)[..., np.argsort(decode_order)].reshape(16, 128)
    inputs["x"] = packing.pack_int4(shuffled)
    assert not np.array_equal(reference.emulate("sparse_w4a4", inputs, shape), x @ w.T)


@pytest.mark.parametrize(
    ("variant", "shape", "message"),
    [
        ("sparse_w4a4", {"m": 24}, "m = 24 is not a positive multiple of 16"),
        ("sparse_w4a4", {"n": 48}, "n = 48 is not a positive multiple of 32"),
        ("sparse_w4a4", {"k": 224}, "k = 224 is not a positive multiple of 64"),
        ("dense_w8a8", {"k": 200}, "k = 200 is not a positive multiple of 16"),
        ("dense_w8a8", {"waves": 9}, "waves = 9 is outside 1..8"),
    ],
)
def test_shapes_that_are_not_whole_tiles_are_refused_before_any_launch(variant, shape, message):
    rng = np.random.default_rng(10)
    inputs = sparse_inputs(rng, 48, 64, 256)[2] if variant == "sparse_w4a4" else {"w": np.zeros((64, 256), np.int8),
                                                                                  "x": np.zeros((48, 256), np.int8)}
    with pytest.raises(HyperloomError, match=message):
        getattr(reference, variant)(inputs, dict(SHAPE, **shape))


@pytest.mark.parametrize(("name", "array", "message"), [("w_idx", np.zeros((64, 8), np.int32), "w_idx has dtype int32"),
                                                         ("x", np.zeros((48, 16), np.uint32),
                                                          r"x has shape \(48, 16\), expected \(48, 32\)")])
def test_operands_of_the_wrong_dtype_or_shape_are_named(name, array, message):
    inputs = sparse_inputs(np.random.default_rng(11), 48, 64, 256)[2]
    inputs[name] = array
    with pytest.raises(HyperloomError, match=message):
        reference.sparse_w4a4(inputs, SHAPE)


@pytest.mark.parametrize("variant", ["sparse_w4a4", "dense_w8a8"])
def test_each_spec_is_exact_rdna4_only_and_says_its_figures_are_assumed(variant):
    loaded = loaded_spec(REPO / "kernels" / "prefill" / variant)
    spec = loaded.spec
    assert spec.tolerance.atol == 0 and spec.tolerance.rtol == 0
    assert spec.variants["gpu"].targets == ["gfx1200", "gfx1201"]
    assert "ASSUMED" in spec.description and "No run has happened" in spec.description
    assert spec.metric.flops and spec.metric.bytes
    shape = spec.shapes[-1]
    packing.check_shape(variant, shape)
    y = reference_of(loaded)(draw_inputs(spec, shape), shape)["y"]
    assert y.dtype == np.int32 and y.shape == (shape["m"], shape["n"]) and np.abs(y).max() > 0
