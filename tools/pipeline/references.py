"""Reference outputs, cached by everything that determines them.

A spec's reference is plain numpy and can take seconds at large shapes (the decode GEMV's at
128256 x 4096 takes ~8 s), while a benchmark session computes the same references again for every
variant, every run and every tune re-validation, with a GPU held and idle. The outputs are a pure
function of the inputs, the shape, the reference function and the Python files beside it (a
reference may import its siblings), the package and numpy: the key hashes all of them, so any change
to one computes afresh. Only references whose outputs are small (OUTPUT_LIMIT_BYTES) are kept.
The reference itself runs in a worker process (tools/kernelspec/reference.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

import hyperloom
from hyperloom.core.dtypes import as_bits, load_npy, numpy_dtype
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.hashing import sha256_bytes, sha256_file, sha256_json
from hyperloom.tools.kernelspec.load import LoadedSpec, buffer_shape, output_buffers
from hyperloom.tools.kernelspec.reference import REFERENCE_TIMEOUT_S, run_reference

OUTPUT_LIMIT_BYTES = 64 << 20  # larger outputs (a 1 GiB copy) are recomputed, not stored


def stage_references(
    loaded: LoadedSpec, shape: Mapping[str, int], inputs: Mapping[str, np.ndarray], folder: Path, *, timeout_s: float = REFERENCE_TIMEOUT_S,
) -> list[Path]:
    """ref_<output>.npy in `folder` for the inputs staged there (in_<arg>.npy): from the cache when this
    exact computation ran before, else from the reference in a worker process."""
    outputs = output_buffers(loaded.spec)
    paths = [folder / f"ref_{a.name}.npy" for a in outputs]
    size = sum(int(np.prod(buffer_shape(a, shape))) * numpy_dtype(a.dtype).itemsize for a in outputs)
    if size > OUTPUT_LIMIT_BYTES:
        run_reference(loaded, shape, folder, folder, timeout_s=timeout_s)
        return paths
    cached = cache_dir("references") / _key(loaded, shape, inputs)
    if all(_valid(cached / p.name) for p in paths):
        for path in paths:
            write_bytes_atomic(path, (cached / path.name).read_bytes())
        return paths
    run_reference(loaded, shape, folder, folder, timeout_s=timeout_s)
    for path in paths:
        write_bytes_atomic(cached / path.name, path.read_bytes())
    return paths


def _valid(path: Path) -> bool:
    """A cache entry that loads as an array (a damaged one is computed and written again)."""
    try:
        load_npy(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return True


def _key(loaded: LoadedSpec, shape: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> str:
    return sha256_json({
        "function": loaded.reference_name,
        "sources": {p.name: sha256_file(p) for p in sorted(loaded.reference_file.parent.glob("*.py"))},
        "outputs": [[a.name, a.dtype, list(buffer_shape(a, shape))] for a in output_buffers(loaded.spec)],
        "shape": dict(shape),
        "inputs": {name: [str(a.dtype), list(a.shape), _digest(a)] for name, a in sorted(inputs.items())},
        "hyperloom": hyperloom.__version__,
        "numpy": np.__version__,
    })


def _digest(array: np.ndarray) -> str:
    return sha256_bytes(memoryview(as_bits(np.ascontiguousarray(array))).cast("B"))  # type: ignore[arg-type]  # hashed in place, not copied
