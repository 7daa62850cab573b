"""The tensors an op was called with, as torch.profiler records them (record_shapes): dims, dtype, bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hyperloom.tools.profile.trace import Op

DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "long": 8, "int": 4, "unsigned int": 4,
    "short int": 2, "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::complex<c10::Half>": 4, "c10::quint8": 1, "c10::qint8": 1, "c10::qint32": 4,
}
# torch's ScalarType numbers, as a dtype argument appears in "Concrete Inputs" (e.g. aten::_to_copy's dtype)
SCALAR_TYPES = {0: "unsigned char", 1: "signed char", 2: "short int", 3: "int", 4: "long int", 5: "c10::Half", 6: "float",
                7: "double", 11: "bool", 15: "c10::BFloat16", 23: "c10::Float8_e5m2", 24: "c10::Float8_e4m3fn",
                25: "c10::Float8_e5m2fnuz", 26: "c10::Float8_e4m3fnuz"}
NUMPY_NAMES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16", "long int": "int64",
               "long": "int64", "int": "int32", "short int": "int16", "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
               "c10::Float8_e4m3fn": "float8_e4m3fn", "c10::Float8_e5m2": "float8_e5m2"}


@dataclass(frozen=True)
class Tensor:
    dims: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    def like(self, dims: tuple[int, ...] | None = None, dtype: str | None = None) -> Tensor:
        return Tensor(self.dims if dims is None else dims, dtype or self.dtype)

    def text(self) -> str:
        return f"[{', '.join(map(str, self.dims))}] {NUMPY_NAMES.get(self.dtype, self.dtype)}"


def arguments(op: Op) -> list[Tensor | None]:
    """One entry per argument of `op`: a Tensor where the argument is one (known dtype, flat int dims), else None."""
    dims, types = op.dims or [], op.types or []
    out: list[Tensor | None] = []
    for d, t in zip(dims, types):
        if t in DTYPE_BYTES and isinstance(d, list) and all(isinstance(v, int) for v in d):
            out.append(Tensor(tuple(d), t))
        else:
            out.append(None)
    return out


def concrete(op: Op, index: int) -> str | None:
    """The text of scalar argument `index` ('' and missing are None)."""
    values = op.concrete or []
    value = values[index] if index < len(values) else None
    return value if isinstance(value, str) and value != "" else None


def scalar_type(op: Op, index: int) -> str | None:
    """A dtype argument given as torch's ScalarType number, as a dtype name."""
    text = concrete(op, index)
    return SCALAR_TYPES.get(int(text)) if text is not None and text.lstrip("-").isdigit() else None


def broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """numpy/torch broadcasting of several shapes (a mismatch keeps the larger size: the model only needs sizes)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        out.append(max(sizes) if sizes else 1)
    return tuple(out)


def label(op: Op) -> str:
    """'aten::mm [8, 4096] bfloat16, [4096, 4096] bfloat16' (tensor arguments only)."""
    tensors = [t.text() for t in arguments(op) if t is not None]
    return f"{op.name} {', '.join(tensors)}" if tensors else op.name
