"""The tensor-core tile layout of the decode weights (packing.tile_int4_for_mma) and its reference."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_modules import kernel_module
from hyperloom.core.errors import HyperloomError

packing = kernel_module("decode", "packing")
reference = kernel_module("decode", "reference")


@pytest.mark.parametrize(("n", "k"), [(100, 256), (16, 64), (33, 192)])
def test_weights_and_scales_round_trip_through_the_tile_layout(n, k):
    rng = np.random.default_rng(n + k)
    codes = rng.integers(-8, 8, size=(n, k), dtype=np.int8)
    words = packing.tile_int4_for_mma(codes)
    assert words.dtype == np.uint32 and words.shape == (-(-n // 16), k // 64, 128)
    assert np.array_equal(packing.untile_int4_for_mma(words, n), codes)
    scales = rng.uniform(0.002, 0.02, size=(n, k // 32)).astype(np.float16)
    tiled = packing.tile_scales_for_mma(scales)
    assert tiled.shape == (-(-n // 16), k // 32, 16) and np.array_equal(packing.untile_scales_for_mma(tiled, n), scales)


def test_each_nibble_holds_the_row_and_k_the_kernel_reads_for_its_fragment():
    """Lane l = 4g + q, word j, nibble i of tile t, block b: row 16t + g (+ 8), k = 64b + 16q + 4j + r (MMA_NIBBLES),
    and a lane's pair of scales is rows g and g + 8: what w4a16_tiled.cu assumes when it builds a0..a3 and b0, b1."""
    rng = np.random.default_rng(3)
    n, k = 40, 192
    codes = rng.integers(-8, 8, size=(n, k), dtype=np.int8)
    words = packing.tile_int4_for_mma(codes)
    for tile, block, g, q, j, i in zip(*(rng.integers(0, top, 300) for top in (3, 3, 8, 4, 4, 8)), strict=True):
        row_offset, r = packing.MMA_NIBBLES[i]
        row, kk = 16 * tile + g + row_offset, 64 * block + 16 * q + 4 * j + r
        nibble = (int(words[tile, block, 4 * (4 * g + q) + j]) >> (4 * i)) & 0xF
        assert (nibble - 16 if nibble > 7 else nibble) == (codes[row, kk] if row < n else 0)
    assert [packing.MMA_NIBBLES[i] for i in (0, 4)] == [(0, 0), (0, 1)]  # LOP3 on nibbles 0 and 4: a0 = row g, k 0 and 1
    scales = rng.uniform(0.002, 0.02, size=(n, k // 64)).astype(np.float16)
    tiled = packing.tile_scales_for_mma(scales)
    assert tiled[1, 2, 2 * 5] == scales[16 + 5, 2] and tiled[1, 2, 2 * 5 + 1] == scales[16 + 8 + 5, 2]


def _problem(seed: int) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
    """A small decode problem (batch 3, 100 rows: a partial last tile): its shape, int4 codes, per-group scales, activations."""
    rng = np.random.default_rng(seed)
    shape = {"m": 3, "n": 100, "k": 256, "group": 32}
    codes = rng.integers(-8, 8, size=(shape["n"], shape["k"]), dtype=np.int8)
    scales = rng.uniform(0.002, 0.02, size=(shape["n"], shape["k"] // shape["group"])).astype(np.float16)
    return shape, codes, scales, rng.standard_normal((shape["m"], shape["k"])).astype(np.float16)


def test_the_tiled_reference_equals_the_row_layout_reference_on_the_same_weights():
    shape, codes, scales, x = _problem(4)
    row = reference.w4a16({"w": packing.pack_int4(codes), "w_scales": scales, "x": x}, {**shape, "threads": 4, "rows": 8})["y"]
    tiled = reference.w4a16_tiled({"w": packing.tile_int4_for_mma(codes), "w_scales": packing.tile_scales_for_mma(scales), "x": x},
                                  shape)["y"]
    assert np.array_equal(row, tiled)


@pytest.mark.parametrize(("n", "group"), [(100, 4), (64, 4), (16, 2), (40, 1)])
def test_grouped_tiles_put_a_groups_blocks_at_one_k_side_by_side_and_ungroup_exactly(n, group):
    rng = np.random.default_rng(n * group)
    k = 192
    words = packing.tile_int4_for_mma(rng.integers(-8, 8, size=(n, k), dtype=np.int8))
    tiles = words.shape[0]
    grouped = packing.group_tiles(words, group)
    assert grouped.shape == (-(-tiles // group), k // 64, group, 128)
    for tile in range(-(-tiles // group) * group):
        for block in range(k // 64):  # what w4a16_tiled.cu reads for tile `tile`, block `block` with HL_TILE_GROUP = group
            flat = grouped.reshape(-1, 128)[(tile // group * (k // 64) + block) * group + tile % group]
            assert np.array_equal(flat, words[tile, block] if tile < tiles else np.zeros(128, np.uint32))
    assert np.array_equal(packing.ungroup_tiles(grouped, tiles), words)
    scales = packing.pad_tiles(packing.tile_scales_for_mma(rng.uniform(0.002, 0.02, size=(n, 6)).astype(np.float16)), group)
    assert scales.shape[0] == grouped.shape[0] * group and not scales[tiles:].any()


def test_the_grouped_reference_equals_the_tiled_reference_on_the_same_weights():
    shape, codes, scales, x = _problem(5)
    words, tiled_scales = packing.tile_int4_for_mma(codes), packing.tile_scales_for_mma(scales)
    tiled = reference.w4a16_tiled({"w": words, "w_scales": tiled_scales, "x": x}, shape)["y"]
    grouped = reference.w4a16_grouped({"w": packing.group_tiles(words, 4), "w_scales": packing.pad_tiles(tiled_scales, 4), "x": x},
                                      shape)["y"]
    assert np.array_equal(tiled, grouped)
    with pytest.raises(HyperloomError, match=r"w_scales has shape \(7, 8, 16\), expected \(8, 8, 16\)"):
        reference.w4a16_grouped({"w": packing.group_tiles(words, 4), "w_scales": tiled_scales, "x": x}, shape)


@pytest.mark.parametrize(("change", "message"),
                         [({"k": 96}, "multiple of 64"), ({"n": 64}, r"w has shape \(3, 2, 128\), expected \(4, 2, 128\)")])
def test_a_layout_that_does_not_fit_the_shape_is_named(change, message):
    codes = np.zeros((40, 128), dtype=np.int8)
    inputs = {"w": packing.tile_int4_for_mma(codes), "w_scales": np.zeros((3, 4, 16), np.float16), "x": np.zeros((1, 128), np.float16)}
    shape = {"m": 1, "n": 40, "k": 128, "group": 32, **change}
    with pytest.raises(HyperloomError, match=message) as error:
        reference.w4a16_tiled(inputs, shape)
    assert error.value.next_step


@pytest.mark.parametrize(("spec", "w_shape", "scales_shape"),
                         [("w4a16_tiled", (7, 4, 128), (7, 8, 16)), ("w4a16_grouped", (2, 4, 4, 128), (8, 8, 16))])
def test_the_tiled_specs_draw_inputs_their_references_take(spec, w_shape, scales_shape):
    from helpers import REPO
    from hyperloom.tools.kernelspec.load import draw_inputs
    from helpers import loaded_spec, reference_of

    loaded = loaded_spec(REPO / "kernels" / "decode" / spec / "kernel.yaml")
    shape = loaded.shape(6)  # 100 rows: a partial last tile (and, grouped, a partial last group)
    inputs = draw_inputs(loaded.spec, shape, "seeded")
    assert inputs["w"].shape == w_shape and inputs["w_scales"].shape == scales_shape
    y = reference_of(loaded)(inputs, dict(shape))["y"]
    assert y.shape == (3, 100) and np.isfinite(y).all()
