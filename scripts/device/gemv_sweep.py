"""The library's GEMV kernel (kernels/triton/gemv) against cuBLAS (torch's linear) on the GPU at a 1.2B Llama's decode
shapes (one row of x, bf16): each launch configuration's time a call replayed from a CUDA graph (as a decode step's
replay runs it), the best one per shape, and cuBLAS's, with the bytes each reads at what bandwidth. Writes
OUT/gemv_sweep.json, whose "best" maps "N,K" to the winning params (roof_decode.py --gemv-params reads it).

    python3 scripts/device/gemv_sweep.py OUT [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch

from graph_time import graph_us  # beside this script (its folder is first on sys.path)
from hyperloom.tools.workload.kernel_route import launcher

kernel = launcher(torch, "gemv")

SHAPES = {"q+k+v": (3072, 2048), "o": (2048, 2048), "gate+up": (16384, 2048), "down": (2048, 8192), "lm_head": (128256, 2048)}


def main(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    grid = {"BLOCK_N": [8, 16, 32], "BLOCK_K": [256, 512], "num_warps": [4, 8], "num_stages": [3, 4]}
    if args.quick:
        grid = {"BLOCK_N": [8, 16], "BLOCK_K": [256], "num_warps": [4], "num_stages": [3]}
    rows, best = [], {}
    for label, (n_out, k_in) in SHAPES.items():
        x = torch.randn(1, 1, k_in, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n_out, k_in, device="cuda", dtype=torch.bfloat16) / k_in ** 0.5
        want = torch.nn.functional.linear(x, w)
        cublas = graph_us(lambda: torch.nn.functional.linear(x, w), calls=50)  # noqa: B023
        mb = n_out * k_in * 2 / 1e6
        tried = []
        for values in itertools.product(*grid.values()):
            params = dict(zip(grid, values, strict=True))
            try:
                got = kernel.gemv(x, w, None, params)
                error = float((got.float() - want.float()).norm() / want.float().norm())
                us = graph_us(lambda: kernel.gemv(x, w, None, params), calls=50)  # noqa: B023
            except Exception as exc:  # noqa: BLE001 - a configuration the compiler refuses: recorded, not fatal
                tried.append({"params": params, "error": repr(exc)[:200]})
                continue
            tried.append({"params": params, "us": us, "rel_l2_vs_cublas": error})
        ran = [t for t in tried if "us" in t and t["rel_l2_vs_cublas"] < 1e-2]
        winner = min(ran, key=lambda t: t["us"]) if ran else None
        if winner:
            best[f"{n_out},{k_in}"] = winner["params"]
        rows.append({"shape": label, "n": n_out, "k": k_in, "mb": mb, "cublas_us": cublas, "cublas_gb_s": mb / cublas * 1e3, "best": winner, "tried": tried})
        said = f"{winner['us']:7.2f} us ({mb / winner['us'] * 1e3:5.0f} GB/s) {winner['params']}" if winner else "none ran"
        print(f"{label:<8} {n_out:>6} x {k_in:<5} {mb:6.1f} MB: cuBLAS {cublas:7.2f} us ({mb / cublas * 1e3:5.0f} GB/s); kernel best {said}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemv_sweep.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows, "best": best}, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args())
