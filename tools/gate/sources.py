"""Array sources the gate reads in chunks: .npy files (never fully loaded) and small inline arrays."""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hyperloom.core.dtypes import as_bits, is_float, load_npy, npy_header
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file

SUPPORTED_KINDS = frozenset("fiub")
MAX_INLINE_ELEMENTS = 1 << 20
_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "+inf": float("inf"), "-inf": float("-inf")}


class ArraySource(Protocol):
    """A read-only array read as flat chunks in its storage order."""

    label: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool

    @property
    def size(self) -> int: ...

    def read(self, start: int, count: int) -> np.ndarray:
        """Elements [start, start+count) in storage order, native byte order."""
        ...

    def sha256(self) -> str:
        """sha256 of the array as a .npy file."""
        ...


def check_dtype(dtype: np.dtype, label: str) -> None:
    if is_float(dtype) or (dtype.kind in SUPPORTED_KINDS and dtype.kind != "f"):
        return
    void = dtype.kind == "V" and dtype.itemsize in (1, 2)
    raise HyperloomError(
        f"{label} has dtype {dtype.str!r}, which the gate does not compare"
        + (" (numpy.save writes a bfloat16 or fp8 array of ml_dtypes so, and the dtype is lost)" if void else ""),
        "save it as float16/float32/float64, bfloat16 or an fp8 dtype with hyperloom.core.dtypes.save_npy (which keeps the dtype),"
        " a signed or unsigned integer, or bool (complex: compare real and imaginary parts as two arrays)",
    )


def _native(chunk: np.ndarray) -> np.ndarray:
    return chunk if chunk.dtype.isnative else chunk.astype(chunk.dtype.newbyteorder("="))


@dataclass
class NpyFile:
    """A .npy file read with positioned reads, so memory stays bounded by the chunk size."""

    path: Path
    label: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int
    known_sha256: str | None = None

    @classmethod
    def open(cls, path: Path, label: str, known_sha256: str | None = None, *, comparable: bool = True) -> NpyFile:
        """`known_sha256`: the file's hash when the caller has just verified it (a frozen set). `comparable=False`
        checks the header against the file's size without asking for a dtype the gate compares."""
        try:
            with path.open("rb") as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
                elif version == (2, 0):
                    shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(handle)
                else:
                    raise ValueError(f"unsupported .npy format version {version}")
                offset = handle.tell()
        except (ValueError, OSError, SyntaxError) as exc:
            raise HyperloomError(
                f"{label} is not a readable .npy file ({exc})",
                "write the array with numpy.save (format 1.0 or 2.0) and pass that file",
            ) from exc
        if dtype.hasobject or dtype.fields is not None:
            raise HyperloomError(
                f"{label} holds a {'Python object' if dtype.hasobject else 'structured'} array, which is never unpickled or compared",
                "save a plain numeric array with numpy.save",
            )
        if comparable:
            check_dtype(dtype, label)
        source = cls(path, label, tuple(int(n) for n in shape), dtype, bool(fortran_order), offset, known_sha256)
        expected = offset + source.size * dtype.itemsize
        actual = path.stat().st_size
        if actual < expected:
            raise HyperloomError(
                f"{label} is truncated: its header promises {expected} bytes, the file has {actual}",
                "write the file again with numpy.save; a killed writer leaves such files",
            )
        return source

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact: a forged header's huge shape cannot wrap around

    def read(self, start: int, count: int) -> np.ndarray:
        out = np.empty(count, dtype=self.dtype)
        view = memoryview(as_bits(out)).cast("B")
        offset = self.data_offset + start * self.dtype.itemsize
        fd = os.open(self.path, os.O_RDONLY)
        try:
            done = 0
            while done < len(view):
                got = os.preadv(fd, [view[done:]], offset + done)
                if got == 0:
                    raise HyperloomError(f"{self.label} ended early while being read", "check that no process is rewriting it")
                done += got
        finally:
            os.close(fd)
        return _native(out)

    def sha256(self) -> str:
        return self.known_sha256 or sha256_file(self.path)


@dataclass
class InMemory:
    """An array already in memory: inline values, or a file in a layout that cannot be streamed."""

    array: np.ndarray
    label: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def fortran_order(self) -> bool:
        return False

    @property
    def size(self) -> int:
        return int(self.array.size)

    def read(self, start: int, count: int) -> np.ndarray:
        return _native(self.array.reshape(-1)[start : start + count])

    def sha256(self) -> str:
        """The sha256 of the .npy file save_npy would write (numpy.save's, a narrow float's dtype kept): its header, then the
        array's bytes, hashed in place."""
        array = np.asanyarray(self.array)
        data = array if array.flags.c_contiguous or array.flags.f_contiguous else np.ascontiguousarray(array)
        digest = hashlib.sha256(npy_header(data))
        digest.update(memoryview(as_bits(data).reshape(-1, order="F" if data.flags.f_contiguous and not data.flags.c_contiguous
                                                                 else "C")).cast("B"))
        return digest.hexdigest()


def _replace_non_finite(value: Any, label: str) -> Any:
    if isinstance(value, list):
        return [_replace_non_finite(item, label) for item in value]
    if isinstance(value, str):
        try:
            return _NON_FINITE[value.strip().lower()]
        except KeyError:
            raise HyperloomError(
                f"{label} contains the string {value!r}, which is neither a number nor a file path",
                'write numbers, or "nan", "inf", "-inf" for non-finite values',
            ) from None
    if isinstance(value, bool | int | float):
        return value
    raise HyperloomError(f"{label} contains {type(value).__name__} {value!r}", "inline arrays hold only numbers")


def inline_array(values: list[Any], dtype: np.dtype, label: str) -> InMemory:
    """Build an array from a (nested) JSON list; strings 'nan', 'inf', '-inf' stand for non-finite floats."""
    cleaned = _replace_non_finite(values, label)
    try:
        with np.errstate(all="raise"):
            array = np.array(cleaned, dtype=dtype)
    except (ValueError, TypeError, OverflowError, FloatingPointError) as exc:
        raise HyperloomError(
            f"{label} cannot be read as a {dtype.name} array ({exc})",
            "give a rectangular nested list whose values fit the dtype (set inline_dtype to choose it)",
        ) from exc
    if array.size > MAX_INLINE_ELEMENTS:
        raise HyperloomError(
            f"{label} has {array.size} inline elements (more than {MAX_INLINE_ELEMENTS})",
            "save large arrays with numpy.save and pass the .npy path",
        )
    return InMemory(array, label)


def in_memory_copy(source: NpyFile) -> InMemory:
    """Load a whole file in C order; used only when two files disagree on storage order."""
    return InMemory(np.ascontiguousarray(load_npy(source.path)), source.label)
