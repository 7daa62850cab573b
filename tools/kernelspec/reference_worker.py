"""Runs in a worker process (hyperloom.core.worker): import a spec's reference, call it on staged
inputs, check what it returns against the spec's output buffers, save each as ref_<name>.npy.

The reference's folder is first on sys.path, so it may import the modules beside it by name.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.core.dtypes import is_float, is_narrow_float, load_npy, numpy_dtype, save_npy


class ReferenceContractError(Exception):
    """The reference ran but broke the contract: (inputs, shape) -> {output name: array of the declared size}."""


def compute(payload: dict[str, Any]) -> dict[str, Any]:
    path, function_name = Path(payload["file"]), payload["function"]
    sys.path.insert(0, str(path.parent))
    module_spec = importlib.util.spec_from_file_location(f"hyperloom_reference_{payload['spec_name']}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ReferenceContractError(f"{path.name} defines no function {function_name!r}")
    sets = payload.get("sets") or [{"inputs_dir": payload["inputs_dir"], "out_dir": payload["out_dir"]}]
    runs = [_one(function, Path(each["inputs_dir"]), Path(each["out_dir"]), payload) for each in sets]
    return {**runs[0], "sets": runs}


def _one(function: Any, inputs_dir: Path, out_dir: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """The reference on one staged input set: its outputs saved in `out_dir`, what it returned reported."""
    inputs = {p.name[3:-4]: load_npy(p) for p in sorted(inputs_dir.glob("in_*.npy"))}  # bfloat16 and fp8 as ml_dtypes arrays
    started = time.perf_counter()
    returned = function(inputs, dict(payload["shape"]))
    elapsed_s = time.perf_counter() - started
    if not isinstance(returned, dict):
        raise ReferenceContractError(f"it returned {type(returned).__name__}, not a dict of output name -> array")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for output in payload["outputs"]:
        name, dtype, dims = output["name"], numpy_dtype(output["dtype"]), tuple(output["dims"])
        if name not in returned:
            raise ReferenceContractError(f"it returned no {name!r} (it returned {sorted(map(str, returned))})")
        try:
            array = np.asarray(returned[name])
        except Exception as exc:  # noqa: BLE001 - anything the user returned that numpy cannot take
            raise ReferenceContractError(f"its {name!r} is not an array ({exc})") from exc
        if array.size != math.prod(dims):
            raise ReferenceContractError(f"its {name!r} has shape {array.shape} ({array.size} elements); the spec declares {list(dims)}")
        if array.dtype.kind not in "biuf" and not is_narrow_float(array.dtype):
            raise ReferenceContractError(f"its {name!r} has dtype {array.dtype}, not a number type")
        converted = array.astype(dtype).reshape(dims)  # a float64 result rounds to nearest in bfloat16 or fp8
        save_npy(out_dir / f"ref_{name}.npy", converted)
        nan = int(np.isnan(converted).sum()) if is_float(converted.dtype) else 0
        report[name] = {"returned_dtype": str(array.dtype), "returned_shape": list(array.shape), "nan": nan}
    return {"elapsed_s": elapsed_s, "outputs": report}
