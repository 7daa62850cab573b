"""The `triton_interpreter` runtime backend: a Triton kernel's math run by Triton's interpreter
(TRITON_INTERPRET=1) on the CPU, inside the trial's worker process, so the gate can check it without a GPU.

Interpreter times are not kernel times (it executes each program in Python), so a timing trial is
answered with an error that says so: bench reports no speed, tune records no candidate as fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import load_npy, numpy_dtype, save_npy
from hyperloom.tools.runtime.gpu import fill_byte
from hyperloom.tools.runtime.models import TrialRequest, TrialResult

NOT_TIMED = ("the Triton interpreter runs the kernel's math on the CPU for the gate; its times are not kernel times, so nothing is"
             " timed: bench or tune a GPU target (gfx…, sm_XX) for speed")


def run_interpreted(request: TrialRequest) -> TrialResult:
    if request.mode == "timing":
        return TrialResult(status="ERROR", message=NOT_TIMED, device="Triton interpreter (CPU)")
    os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit decorates the kernel, below
    try:
        import torch  # noqa: F401 - the tensors the kernel gets are torch's (tools/triton/dtypes.py)
    except ImportError:
        return TrialResult(status="ERROR", message="the Triton interpreter needs torch (a CPU build is enough): pip install torch")
    from hyperloom.tools.triton.dtypes import to_numpy, to_torch
    from hyperloom.tools.triton.entry import EntryError, apply_heuristics, load_module, unwrap

    plan = json.loads(Path(request.code_object).read_text())
    try:
        function, chain = unwrap(load_module(plan["source"]), plan["entry"])
        tensors: dict[str, object] = {}
        values: list[object] = []
        for arg in request.args:
            if arg.kind == "scalar":
                values.append(arg.value)
                continue
            if arg.input_path:
                array = np.ascontiguousarray(load_npy(arg.input_path)).copy()
            else:
                array = np.empty(arg.shape, dtype=numpy_dtype(arg.dtype))
                array.view(np.uint8)[...] = fill_byte(arg)  # outputs poisoned, scratch zeroed, as on a GPU
            tensors[arg.name] = to_torch(array)
            values.append(tensors[arg.name])
        constexprs = dict(plan["constexprs"])
        if plan["heuristics"]:
            computed = apply_heuristics(chain, {**dict(zip((a.name for a in request.args), values, strict=True)), **constexprs})
            constexprs.update({name: computed[name] for name in plan["heuristics"]})
        grid = tuple(request.grid)
        function[grid](*values, **constexprs)
    except EntryError as exc:
        return TrialResult(status="ERROR", message=f"{exc.kind}: {exc.message}" + (f" at {exc.where}" if exc.where else ""))
    for arg in request.args:
        if arg.kind == "buffer" and arg.output_path:
            save_npy(arg.output_path, to_numpy(tensors[arg.name], numpy_dtype(arg.dtype)))
    return TrialResult(status="OK", device="Triton interpreter (CPU)")
