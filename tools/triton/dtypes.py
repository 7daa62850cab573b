"""A spec buffer's dtype as Triton and torch name it, and numpy arrays to torch tensors and back (bfloat16 and fp8 included).

torch.from_numpy cannot take ml_dtypes arrays, so a narrow float crosses as its storage (uint8 or int16) viewed in
torch's dtype of the same format; nothing is converted on the way. Triton's names: float8_e4m3fn is tl.float8e4nv,
float8_e5m2 tl.float8e5, and AMD's fnuz formats tl.float8e4b8 and tl.float8e5b16 (exponent biases 8 and 16).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hyperloom.core.dtypes import is_narrow_float

TL_DTYPES = {"float16": "float16", "float32": "float32", "float64": "float64", "bfloat16": "bfloat16", "float8_e4m3fn": "float8e4nv",
             "float8_e5m2": "float8e5", "float8_e4m3fnuz": "float8e4b8", "float8_e5m2fnuz": "float8e5b16", "int8": "int8", "int16": "int16",
             "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}
_SIGNED_STORAGE = {1: np.int8, 2: np.int16}  # torch views from int8/int16 to every narrow float of that width


def tl_dtype(name: str) -> Any:
    """The triton.language dtype of a spec dtype (a KeyError for a name the spec models do not allow)."""
    import triton.language as tl

    return getattr(tl, TL_DTYPES[name])


def to_torch(array: np.ndarray) -> Any:
    """A CPU tensor sharing `array`'s memory, in torch's dtype of the same format."""
    import torch

    if not is_narrow_float(array.dtype):
        return torch.from_numpy(array)
    storage = array.view(_SIGNED_STORAGE[array.dtype.itemsize])
    return torch.from_numpy(storage).view(getattr(torch, array.dtype.name))


def to_numpy(tensor: Any, dtype: np.dtype) -> np.ndarray:
    """A CPU tensor as a numpy array of the spec's `dtype` (ml_dtypes for bfloat16 and fp8), the same bytes."""
    import torch

    if not is_narrow_float(dtype):
        return tensor.numpy()
    width = torch.int8 if dtype.itemsize == 1 else torch.int16
    return tensor.view(width).numpy().view(dtype)


def torch_dtype(name: str) -> Any:
    """torch's dtype of a spec dtype (its names are numpy's and ml_dtypes')."""
    import torch

    return getattr(torch, name)
