"""Where the static KV cache's step spends its time (issue 32: what a stack on top of the best lever can still win).
The decoder of examples/workloads/decoder.py under `cache=static` (transformers compiles its decode step, mode
reduce-overhead): the whole `generate` beside its prefill alone (one new token), the per-token rest, the device time
in one profiled step, CUDA graph launches and the compiles a warmed-up step makes. Timed steps are synchronized wall
time, medians; every figure says what it is.

    python3 lab/static-cache-step/static_decode.py OUT [--layers 8] [--repeats 7] [--overrides FILE.py ...]

--overrides: integrate's overrides modules, imported (they replace methods for the whole process) before a last
static-cache run, whose tokens are compared with the plain static cache's.

Writes OUT/static_decode.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "workloads"))
from decoder import build  # noqa: E402 - the workload the campaign optimizes


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed_s(step, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return times


def profiled(step) -> dict[str, float | int]:
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        step()
        sync()
        wall_s = time.perf_counter() - start
    events = prof.events()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    device_us = sum(e.device_time for e in kernels if e.device_time)
    names = {e.name for e in events}
    return {"profiled_wall_ms": round(wall_s * 1e3, 3), "device_kernel_ms": round(device_us / 1e3, 3), "kernels": len(kernels),
            "graph_launches": sum(1 for e in events if e.name == "cudaGraphLaunch"),
            "kernel_launches": sum(1 for e in events
                                   if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")),
            "compiled_regions": sum(1 for e in events if e.name.startswith("Torch-Compiled Region")), "distinct_names": len(names)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--knobs", type=json.loads, default={},
                        help="more of the factory's keyword arguments (a CPU smoke run: small sizes)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--overrides", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    from torch._dynamo.utils import counters
    result: dict[str, object] = {"measured": "MEASURED", "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                                 "torch": torch.__version__}
    runs = [("dynamic", "dynamic"), ("static", "static")] + ([("static+overrides", "static")] if args.overrides else [])
    tokens: dict[str, torch.Tensor] = {}
    for label, cache in runs:
        torch._dynamo.reset()
        if label == "static+overrides":
            import importlib.util
            for number, path in enumerate(args.overrides):
                spec = importlib.util.spec_from_file_location(f"overrides_{number}", path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module  # dynamo finds a traced function's globals through its module
                spec.loader.exec_module(module)
        workload = build(cache=cache, layers=args.layers, **args.knobs)
        full = workload.step
        warm_start = time.perf_counter()
        for _ in range(3):
            full()
        warmup_s = time.perf_counter() - warm_start
        reference = workload.tokens.clone()
        graphs_before = dict(counters["stats"])
        full_ms = [t * 1e3 for t in timed_s(full, args.repeats)]
        graphs_after = dict(counters["stats"])
        same = bool(torch.equal(workload.tokens, reference))
        new_tokens = workload.new_tokens
        workload.new_tokens = 1
        prefill_ms = [t * 1e3 for t in timed_s(workload.step, args.repeats)]
        workload.new_tokens = new_tokens
        profile = profiled(full)
        decode_ms = (statistics.median(full_ms) - statistics.median(prefill_ms)) / (new_tokens - 1)
        tokens[label] = reference.cpu()
        equal = bool(torch.equal(tokens[label], tokens["static"])) if "static" in tokens else None
        result[label] = {"tokens_equal_static": equal, "warmup_s": round(warmup_s, 2),
                         "step_ms": [round(t, 3) for t in full_ms], "step_median_ms": round(statistics.median(full_ms), 3),
                         "prefill_and_one_token_median_ms": round(statistics.median(prefill_ms), 3),
                         "per_later_token_ms": round(decode_ms, 3), "tokens_repeat": same,
                         "dynamo_stats_during_timed_steps": {k: graphs_after.get(k, 0) - graphs_before.get(k, 0) for k in graphs_after},
                         "profile_one_step": profile}
        print(label, json.dumps(result[label]), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "static_decode.json").write_text(json.dumps(result, indent=1))
        del workload
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
