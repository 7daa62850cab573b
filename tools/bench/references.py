"""Reference outputs, cached by everything that determines them.

A spec's reference is plain numpy and can take seconds at large shapes (the decode GEMV's at
128256 x 4096 takes ~8 s), while a benchmark session computes the same references again for every
variant, every run and every tune re-validation, with a GPU held and idle. The outputs are a pure
function of the inputs, the shape, the reference function and the Python files beside it (a
reference may import its siblings), the package and numpy: the key hashes all of them, so any change
to one computes afresh. Only references whose outputs are small (OUTPUT_LIMIT_BYTES) are kept.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

import numpy as np

import hyperloom
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.hashing import sha256_bytes, sha256_file, sha256_json
from hyperloom.tools.spec.load import LoadedSpec, buffer_shape, output_buffers, reference_function

OUTPUT_LIMIT_BYTES = 64 << 20  # larger outputs (a 1 GiB copy) are recomputed, not stored


def reference_outputs(loaded: LoadedSpec, shape: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The reference's outputs for these inputs: from the cache when this exact computation ran before."""
    outputs = output_buffers(loaded.spec)
    size = sum(int(np.prod(buffer_shape(a, shape))) * np.dtype(a.dtype).itemsize for a in outputs)
    compute = lambda: reference_function(loaded)({k: v.copy() for k, v in inputs.items()}, dict(shape))  # noqa: E731
    if size > OUTPUT_LIMIT_BYTES:
        return compute()
    folder = cache_dir("references") / _key(loaded, shape, inputs)
    names = [a.name for a in outputs]
    try:
        return {name: np.load(folder / f"{name}.npy", allow_pickle=False) for name in names}
    except (OSError, ValueError):  # not cached yet, or a damaged entry: compute (and rewrite) it
        pass
    expected = compute()
    for name in names:
        if name in expected:
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(expected[name]), allow_pickle=False)
            write_bytes_atomic(folder / f"{name}.npy", buffer.getvalue())
    return expected


def _key(loaded: LoadedSpec, shape: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> str:
    file, _, function = loaded.spec.reference.partition(":")
    beside = (loaded.path.parent / file).resolve().parent
    return sha256_json({
        "function": function,
        "sources": {p.name: sha256_file(p) for p in sorted(beside.glob("*.py"))},
        "shape": dict(shape),
        "inputs": {name: [str(a.dtype), list(a.shape), _digest(a)] for name, a in sorted(inputs.items())},
        "hyperloom": hyperloom.__version__,
        "numpy": np.__version__,
    })


def _digest(array: np.ndarray) -> str:
    return sha256_bytes(memoryview(np.ascontiguousarray(array)).cast("B"))  # type: ignore[arg-type]  # hashed in place, not copied
