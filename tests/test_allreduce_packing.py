"""int6 packing: every one of the 64^4 value combinations and every 2^24 byte triple, numpy and torch alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperloom.tools.allreduce import torch_codec
from hyperloom.tools.allreduce.packing import decode, encode, pack_int6, unpack_int6, wire_bytes, wire_format_for


@pytest.fixture(scope="module")
def every_combination() -> np.ndarray:
    """All 64^4 quadruples of int6 values, flattened: 67 MB of int8."""
    values = np.arange(-32, 32, dtype=np.int8)
    return np.stack(np.meshgrid(values, values, values, values, indexing="ij"), axis=-1).reshape(-1)


@pytest.fixture(scope="module")
def every_triple() -> np.ndarray:
    """All 2^24 three-byte groups, little-endian."""
    return np.arange(1 << 24, dtype="<u4").view(np.uint8).reshape(-1, 4)[:, :3].reshape(-1).copy()


def test_the_layout_is_four_six_bit_fields_low_byte_first():
    # a=1, b=-1 (0b111111), c=0, d=31 → word 1 | 63<<6 | 0<<12 | 31<<18 = 0x7C0FC1
    assert pack_int6(np.array([1, -1, 0, 31], np.int8)).tolist() == [0xC1, 0x0F, 0x7C]
    assert unpack_int6(np.array([0xC1, 0x0F, 0x7C], np.uint8)).tolist() == [1, -1, 0, 31]


def test_every_combination_of_four_values_round_trips(every_combination):
    packed = pack_int6(every_combination)
    assert packed.size == every_combination.size * 3 // 4
    assert np.array_equal(unpack_int6(packed), every_combination)


def test_every_byte_triple_unpacks_to_its_four_fields(every_triple):
    words = np.arange(1 << 24, dtype=np.int64)
    fields = np.stack([(words >> s) & 63 for s in (0, 6, 12, 18)], axis=1)
    expected = np.where(fields >= 32, fields - 64, fields).reshape(-1)
    assert np.array_equal(unpack_int6(every_triple), expected)
    assert np.array_equal(pack_int6(unpack_int6(every_triple)), every_triple)


def test_torch_packs_and_unpacks_the_same_bytes_as_numpy(every_combination, every_triple):
    packed = torch_codec.pack_int6(torch.from_numpy(every_combination))
    assert np.array_equal(packed.numpy(), pack_int6(every_combination))
    assert np.array_equal(torch_codec.unpack_int6(torch.from_numpy(every_triple)).numpy(), unpack_int6(every_triple))


@pytest.mark.parametrize("count", [4, 8, (1 << 18) - 4, (1 << 18) + 4, 3 * (1 << 18) + 12])
def test_lengths_across_chunk_boundaries_round_trip(count):
    codes = np.random.default_rng(count).integers(-32, 32, count).astype(np.int8)
    assert np.array_equal(unpack_int6(pack_int6(codes)), codes)


def test_lengths_that_are_not_whole_groups_are_refused():
    with pytest.raises(ValueError, match="multiple of 4"):
        pack_int6(np.zeros(6, np.int8))
    with pytest.raises(ValueError, match="multiple of 3"):
        unpack_int6(np.zeros(4, np.uint8))


@pytest.mark.parametrize(
    ("bound", "fmt"), [(1, "int6"), (31, "int6"), (32, "int8"), (127, "int8"), (128, "int16"), (32767, "int16")]
)
def test_the_wire_format_is_the_narrowest_that_holds_the_bound(bound, fmt):
    assert wire_format_for(bound) == fmt


@pytest.mark.parametrize(("fmt", "low", "high"), [("int6", -32, 31), ("int8", -128, 127), ("int16", -32768, 32767)])
def test_every_wire_format_round_trips_its_whole_range_in_numpy_and_torch(fmt, low, high):
    values = np.arange(low, high + 1, dtype=np.int16)
    values = np.concatenate([values, values[: (-values.size) % 4]])
    data = encode(values, fmt)
    assert data.dtype == np.uint8 and data.size == wire_bytes(values.size, fmt)
    assert np.array_equal(decode(data, fmt), values)
    on_torch = torch_codec.encode(torch.from_numpy(values), fmt)
    assert np.array_equal(on_torch.numpy(), data)
    assert np.array_equal(torch_codec.decode(on_torch, fmt).numpy(), values)
