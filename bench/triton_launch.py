"""Benchmark: Hyperloom's launch of a Triton kernel against Triton's own launcher (kernel[grid](...)), same kernel.

The shipped kernels/triton/softmax at the chosen shapes and autotune configs: Hyperloom's path is `bench` (the
kernel compiled ahead of time to a cubin/hsaco by Triton's compiler in a worker, gated on every input set, then
launched by the cuda/hip runtime, cache flushed, device events behind a spin); Triton's path calls the @triton.jit
function itself, kernel[grid](x, y, n_cols, BLOCK=…, num_warps=…, num_stages=…), timed with the same flush, spin
and stopping rule (bench/triton_torch_timing.py). Target: the two medians agree within 3 %. Also reported: whether
both paths run the same binary (sha256 of our code object and of the cubin/hsaco Triton's JIT built), and the host
time of one asynchronous launch on each path (Hyperloom's runtime: one cuLaunchKernel through cuda-python with
prebuilt parameters; Triton's: its binder, specialization and launcher), at the smallest shape.
Needs a GPU, torch and triton (the lead's H200 run); AMD runs the same code, untested there (ASSUMED).

Run: python bench/triton_launch.py [--shapes 1 2] [--configs 1 3 5] [--flush-mode write] [--out triton_launch.json] [--workspace DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.pipeline.launch import arg_specs, prepare
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.runtime.drivers import Driver
from hyperloom.tools.runtime.gpu import dims, upload
from hyperloom.tools.runtime.models import Timing
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.triton.loader import describe_kernel
from triton_torch_timing import host_seconds_per_launch, timed  # bench/ is on sys.path when this script runs

AGREE = 0.03


def device_target() -> tuple[str, str]:
    """(target, backend) of GPU 0 as bench names them."""
    if torch.version.hip:
        return torch.cuda.get_device_properties(0).gcnArchName.split(":")[0], "hip"
    major, minor = torch.cuda.get_device_capability(0)
    return f"sm_{major}{minor}", "cuda"


def load_kernel(path: Path):  # noqa: ANN201 - the kernel file, imported as its author would import it
    spec = importlib.util.spec_from_file_location("softmax_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.softmax_kernel.fn  # the @triton.jit function inside @triton.autotune: a fixed config, as bench runs it


def triton_binary(jit) -> bytes | None:  # noqa: ANN001
    """The code object Triton's JIT built for its last launch (cubin or hsaco), when its cache can be read."""
    try:
        kernels = list(jit.device_caches[torch.cuda.current_device()][0].values())
        return kernels[-1].asm.get("cubin") or kernels[-1].asm.get("hsaco")
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--configs", type=int, nargs="+", default=[1, 3, 5], help="indices of the kernel's autotune configs")
    parser.add_argument("--flush-mode", choices=["write", "read"], default="write")
    parser.add_argument("--out", type=Path, default=Path("triton_launch.json"))
    parser.add_argument("--workspace", type=Path, help="default: a temporary folder")
    args = parser.parse_args()
    root = args.workspace or Path(tempfile.mkdtemp(prefix="triton-launch-"))
    shutil.copytree(shipped_kernels("triton", "softmax"), root / "softmax", dirs_exist_ok=True)
    workspace = Workspace.at(root)
    target, backend = device_target()
    loaded = load_spec(root / "softmax", workspace)
    info = describe_kernel(root / "softmax" / "softmax.py", "softmax_kernel", workspace)
    jit = load_kernel(root / "softmax" / "softmax.py")
    timing = Timing(flush_mode=args.flush_mode)
    rows = []
    for shape in args.shapes:
        for config in args.configs:
            params = {"autotune_config": config}
            ours = run_bench(BenchRequest(spec="softmax", target=target, shape=shape, params=params, flush_mode=args.flush_mode), workspace)
            launchable, build = build_with(prepare(loaded, None, target, shape), workspace, params)
            inputs = workspace.root / ours.artifacts / "seeded"
            x = torch.from_numpy(np.load(inputs / "in_x.npy")).cuda()
            y = torch.empty_like(x)
            cols = loaded.shape(shape)["cols"]
            chosen = info.autotune[config]  # type: ignore[index]
            grid = tuple(launchable.grid)

            def launch_triton() -> None:
                jit[grid](x, y, cols, **chosen.kwargs, num_warps=chosen.num_warps, num_stages=chosen.num_stages)

            theirs = timed(launch_triton, timing)
            reference = np.load(inputs / "ref_y.npy") if (inputs / "ref_y.npy").exists() else None
            ours_bytes = (workspace.root / build.code_object).read_bytes()
            theirs_bytes = triton_binary(jit)
            ratio = ours.kernel.median_s / theirs.median_s if ours.ok and ours.kernel else None
            rows.append({
                "shape": loaded.shape(shape), "config": chosen.label(), "gate": [v.summary for v in ours.gate],
                "hyperloom_median_us": ours.kernel.median_s * 1e6 if ours.kernel else None,
                "hyperloom_ci95_rel": ours.kernel.median_ci95_rel if ours.kernel else None,
                "hyperloom_wall_us": ours.wall.median_s * 1e6 if ours.wall else None,
                "triton_launcher_median_us": theirs.median_s * 1e6, "triton_launcher_ci95_rel": theirs.median_ci95_rel,
                "ratio": ratio, "agree_within_3pct": ratio is not None and abs(ratio - 1) <= AGREE,
                "same_binary": None if theirs_bytes is None
                               else hashlib.sha256(ours_bytes).hexdigest() == hashlib.sha256(theirs_bytes).hexdigest(),
                "triton_output_max_abs_err": float(np.abs(y.cpu().numpy() - reference).max()) if reference is not None else None,
            })
            print(json.dumps(rows[-1]), flush=True)
    # Host time of one launch, at the smallest shape (its kernel is shorter than either launch's host work).
    config = args.configs[0]
    params = {"autotune_config": config}
    small = run_bench(BenchRequest(spec="softmax", target=target, shape=0, params=params, adversarial=False, max_time_s=1.0), workspace)
    launchable, build = build_with(prepare(loaded, None, target, 0), workspace, params)
    inputs = workspace.root / small.artifacts / "seeded"
    driver = Driver(backend, 0)
    function = driver.function(driver.load((workspace.root / build.code_object).read_bytes()), launchable.symbol)
    driver.allow_shared(function, launchable.shared_bytes)
    _, kernel_params = upload(driver, arg_specs(launchable, inputs, None))
    ours_host_s = host_seconds_per_launch(lambda: driver.launch(function, dims(launchable.grid), dims(launchable.block),
                                                                launchable.shared_bytes, kernel_params))
    x = torch.from_numpy(np.load(inputs / "in_x.npy")).cuda()
    y = torch.empty_like(x)
    chosen = info.autotune[config]  # type: ignore[index]
    grid, cols = tuple(launchable.grid), loaded.shape(0)["cols"]
    theirs_host_s = host_seconds_per_launch(lambda: jit[grid](x, y, cols, **chosen.kwargs, num_warps=chosen.num_warps,
                                                              num_stages=chosen.num_stages))
    overhead = {"shape": loaded.shape(0), "config": chosen.label(), "hyperloom_host_us_per_launch": ours_host_s * 1e6,
                "triton_launcher_host_us_per_launch": theirs_host_s * 1e6,
                "kernel_median_us": small.kernel.median_s * 1e6 if small.kernel else None}
    result = {"target": target, "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": info.triton_version,
              "flush_mode": args.flush_mode, "rows": rows, "host_overhead": overhead,
              "verdict": "all agree within 3 %" if rows and all(r["agree_within_3pct"] for r in rows) else "NOT all within 3 %",
              "evidence": "MEASURED by bench/triton_launch.py on the device named"}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['verdict']}; host per launch: Hyperloom {overhead['hyperloom_host_us_per_launch']:.2f} us, "
          f"Triton's launcher {overhead['triton_launcher_host_us_per_launch']:.2f} us; written {args.out}")
    sys.exit(0 if result["verdict"].startswith("all") else 1)


if __name__ == "__main__":
    main()
