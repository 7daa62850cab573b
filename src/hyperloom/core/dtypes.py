"""The narrow floats numpy lacks (bfloat16 and the four fp8 formats), through ml_dtypes: their numpy dtypes, their
limits, and .npy files that keep them.

ml_dtypes (the package JAX and TensorFlow use) gives each a real numpy dtype: casts round to nearest even, arithmetic
and comparisons decode the values. numpy.save writes such an array with a descriptor that loses the dtype ('<V2' for
bfloat16; '<f1' for float8_e5m2, which numpy.load then refuses), so save_npy writes the dtype's name instead
('bfloat16'), which numpy.load reads back as that dtype in any process that has imported ml_dtypes. Importing this
module imports it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Literal

import ml_dtypes
import numpy as np

NarrowFloat = Literal["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
NARROW_FLOATS: tuple[str, ...] = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
_NARROW = {np.dtype(getattr(ml_dtypes, name)) for name in NARROW_FLOATS}
FNUZ = ("float8_e4m3fnuz", "float8_e5m2fnuz")  # no Inf, no −0.0, one NaN (the bit pattern of −0.0)


def numpy_dtype(name: str | np.dtype) -> np.dtype:
    """The numpy dtype of a spec dtype name ('float32', 'bfloat16', 'float8_e4m3fnuz', ...)."""
    return np.dtype(name)


def is_narrow_float(dtype: np.dtype) -> bool:
    """bfloat16 or an fp8 format (an ml_dtypes dtype)."""
    return np.dtype(dtype) in _NARROW


def is_float(dtype: np.dtype) -> bool:
    """A floating-point dtype the gate compares by value and ULP: float16/32/64, bfloat16 and the fp8 formats."""
    dtype = np.dtype(dtype)
    return dtype in _NARROW or (dtype.kind == "f" and dtype.itemsize in (2, 4, 8))


def float_info(dtype: np.dtype) -> ml_dtypes.finfo:
    """The limits of a float dtype (max, smallest_subnormal, nmant), numpy's own or a narrow one."""
    return ml_dtypes.finfo(np.dtype(dtype))


def has_inf(dtype: np.dtype) -> bool:
    """Whether the dtype can hold ±Inf (float8_e4m3fn and the fnuz formats cannot: an overflow is NaN)."""
    return bool(np.isinf(np.array(np.inf, dtype=np.float32).astype(np.dtype(dtype))))


def bits_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer of the same width: how a narrow float's storage is viewed (uint16 for bfloat16, uint8 for fp8)."""
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def as_bits(array: np.ndarray) -> np.ndarray:
    """A narrow float array viewed as its unsigned-integer storage (the buffer protocol cannot carry ml_dtypes); others as they are."""
    return array.view(bits_dtype(array.dtype)) if is_narrow_float(array.dtype) else array


def npy_header(array: np.ndarray) -> bytes:
    """The header numpy.save writes for `array`, except that a narrow float's descriptor is its dtype's name."""
    data = np.lib.format.header_data_from_array_1_0(array)
    if is_narrow_float(array.dtype):
        data["descr"] = array.dtype.name
    header = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(header, data)  # what numpy.save writes first (format 1.0 while the header fits)
    except ValueError:
        header = io.BytesIO()
        np.lib.format.write_array_header_2_0(header, data)
    return header.getvalue()


def save_npy(path: str | Path, array: np.ndarray) -> None:
    """numpy.save, keeping a narrow float's dtype (numpy.load reads it back once ml_dtypes is imported)."""
    array = np.asanyarray(array)
    if not is_narrow_float(array.dtype):
        np.save(path, array, allow_pickle=False)
        return
    data = np.ascontiguousarray(array) if not (array.flags.c_contiguous or array.flags.f_contiguous) else array
    with open(path, "wb") as handle:
        handle.write(npy_header(data))
        order = "F" if data.flags.f_contiguous and not data.flags.c_contiguous else "C"
        handle.write(memoryview(as_bits(data).reshape(-1, order=order)).cast("B"))


def load_npy(path: str | Path, mmap_mode: Literal["r", "r+", "c"] | None = None) -> np.ndarray:
    """numpy.load with ml_dtypes imported, so a narrow float file written by save_npy comes back in its dtype."""
    return np.load(path, allow_pickle=False, mmap_mode=mmap_mode)
