"""A workload's step timed by hand, the field's way, in one process with no Hyperloom in the loop: the figure a user
compares a campaign's kept stack against. Each variant builds the workload afresh (its factory), applies one change as a
user would type it (torch.compile of model.forward in a mode, channels_last), warms up, then times `step()` on its
inputs as built with device events around legs of about LEG_S (as triton.testing.do_bench does), the median of REPEATS
legs; the workload's inputs(seed) is never called, so nothing of the harness is timed.

    python bench/by_hand.py scripts/device/user_workloads/conv_resnet_host.py:build --variants eager,compile,reduce-overhead --json OUT.json

Prints ms a step for each variant and its ratio to eager (MEASURED on the device named). A GPU (CUDA or ROCm) only.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

LEG_S = 0.2
REPEATS = 7
WARMUP_STEPS = 5
VARIANTS = ("eager", "compile", "reduce-overhead", "max-autotune-no-cudagraphs", "channels_last", "channels_last+reduce-overhead")


def factory(spec: str) -> Any:
    path, name = spec.rsplit(":", 1)
    module_spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(Path(path).parent))
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def prepared(build: Any, variant: str) -> tuple[Any, Any]:
    """The workload built afresh with `variant` applied: (the workload, what to run before each step)."""
    torch._dynamo.reset()
    work = build()
    before = None
    if variant.startswith("channels_last"):
        work.model = work.model.to(memory_format=torch.channels_last)
        for name, value in vars(work).items():
            if isinstance(value, torch.Tensor) and value.dim() == 4:
                setattr(work, name, value.contiguous(memory_format=torch.channels_last))
    mode = variant.removeprefix("channels_last").removeprefix("+") or None
    if mode in ("compile", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"):
        work.model.forward = torch.compile(work.model.forward, mode=None if mode == "compile" else mode)
        if "cudagraphs" not in mode and mode in ("reduce-overhead", "max-autotune"):
            before = torch.compiler.cudagraph_mark_step_begin
    return work, before


def timed(work: Any, before: Any) -> tuple[float, float]:
    """(median seconds a step over REPEATS legs of device-event timing, the warm-up's seconds: compile included)."""
    began = time.perf_counter()
    for _ in range(WARMUP_STEPS):
        if before is not None:
            before()
        work.step()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - began
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    if before is not None:
        before()
    work.step()
    end.record()
    torch.cuda.synchronize()
    steps = max(1, round(LEG_S / max(start.elapsed_time(end) / 1e3, 1e-6)))
    legs = []
    for _ in range(REPEATS):
        start.record()
        for _ in range(steps):
            if before is not None:
                before()
            work.step()
        end.record()
        torch.cuda.synchronize()
        legs.append(start.elapsed_time(end) / 1e3 / steps)
    return statistics.median(legs), warmup_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", help="file.py:function, the workload's factory")
    parser.add_argument("--variants", default="eager,compile,reduce-overhead", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    build = factory(args.workload)
    rows = {}
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            parser.error(f"unknown variant {variant!r}: use {', '.join(VARIANTS)}")
        work, before = prepared(build, variant)
        step_s, warmup_s = timed(work, before)
        rows[variant] = {"step_s": step_s, "warmup_s": warmup_s}
        del work
        gc.collect()
        torch.cuda.empty_cache()
    eager = rows.get("eager", {}).get("step_s")
    device = torch.cuda.get_device_name(0)
    print(f"MEASURED on {device} (torch {torch.__version__}), {args.workload}: median of {REPEATS} legs of ~{LEG_S * 1e3:g} ms, device "
          "events, inputs as built")
    for variant, row in rows.items():
        ratio = f"{eager / row['step_s']:.3f}x eager" if eager else ""
        print(f"  {variant:<32} {row['step_s'] * 1e3:9.3f} ms a step  {ratio:>14}  (warm-up {row['warmup_s']:.1f} s)")
    best = min(rows, key=lambda v: rows[v]["step_s"])
    print(f"  best by hand: {best}" + (f", {eager / rows[best]['step_s']:.3f}x eager" if eager else ""))
    if args.json:
        args.json.write_text(json.dumps({"device": device, "torch": torch.__version__, "workload": args.workload, "variants": rows,
                                         "best": best}, indent=1))


if __name__ == "__main__":
    main()
