"""Worker side: the kernel's own @triton.autotune run as its author would launch it (kernel[grid](...) with torch
tensors on the GPU), to learn which config it picks here. Triton's autotuner times with its own do_bench;
those figures are reported as Triton's, and the choice is then gated and timed by Hyperloom like any candidate."""

from __future__ import annotations

import os
from typing import Any

from hyperloom.core.dtypes import load_npy
from hyperloom.tools.kernelspec.expr import evaluate_int
from hyperloom.tools.triton.dtypes import to_torch, torch_dtype
from hyperloom.tools.triton.entry import EntryError, autotuner, load_module, unwrap


def choice_payload(payload: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    try:
        return _choose(payload)
    except EntryError as exc:
        return exc.payload()


def _same(config: Any, wanted: dict[str, Any]) -> bool:
    return (dict(config.kwargs) == wanted["kwargs"] and config.num_warps == wanted["num_warps"]
            and config.num_stages == wanted["num_stages"]
            and getattr(config, "num_ctas", None) == wanted["num_ctas"] and getattr(config, "maxnreg", None) == wanted["maxnreg"])


def _choose(payload: dict[str, Any]) -> dict[str, Any]:
    import torch

    module = load_module(payload["source"])
    _, chain = unwrap(module, payload["entry"])
    launch = getattr(module, payload["entry"])  # the outermost wrapper: what the kernel's author calls
    tuner = autotuner(chain)
    if tuner is None:
        raise EntryError("entry", f"{payload['entry']} has no @triton.autotune")
    device = torch.device("cuda", 0)  # ROCm's torch names HIP devices cuda too
    values: dict[str, Any] = {}  # by name: a constexpr may stand between two arguments in the function's order
    for arg in payload["args"]:
        if arg["kind"] == "scalar":
            values[arg["name"]] = arg["value"]
        elif arg.get("input_path"):
            values[arg["name"]] = to_torch(load_npy(arg["input_path"])).to(device)
        else:
            values[arg["name"]] = torch.zeros(arg["shape"], dtype=torch_dtype(arg["dtype"]), device=device)
    shape = payload["shape"]

    def grid(meta: dict[str, Any]) -> tuple[int, ...]:
        names = {**shape, **{k: v for k, v in meta.items() if k in shape and isinstance(v, int)}}
        return tuple(evaluate_int(g, names, "launch grid") for g in payload["grid"])

    launch[grid](**values, **payload["constexprs"])
    torch.cuda.synchronize()
    best = tuner.best_config
    index = next((i for i, c in enumerate(payload["configs"]) if _same(best, c)), None)
    timings = {}
    for config, measured in (getattr(tuner, "configs_timings", None) or {}).items():
        ms = measured[0] if isinstance(measured, list | tuple) else measured
        timings[str(config)] = float(ms)
    return {"index": index, "config": str(best), "triton_ms": timings, "device": torch.cuda.get_device_name(0)}
