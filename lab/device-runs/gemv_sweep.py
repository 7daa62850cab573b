"""The library's GEMV kernel (kernels/triton/gemv) against cuBLAS (torch's linear) on the GPU at a 1.2B Llama's decode
shapes (one row of x, bf16): each launch configuration's time a call replayed from a CUDA graph (as a decode step's
replay runs it), the best one per shape, and cuBLAS's, with the bytes each reads at what bandwidth. Cold by default:
the graph's calls rotate over copies of the weights that together span well past the L2 (a model's decode reads each
weight once a token; session 26's sweep replayed one copy, L2-hot, and its 30-40 % wins vanished in the model);
`--hot` replays one copy. Writes OUT/gemv_sweep.json, whose "best" maps "N,K" to the winning params, or to "cublas"
where cuBLAS was faster beyond 2 % (roof_decode.py --gemv-params reads it; kernels/triton/gemv/tuned.json ships one).

    python3 lab/device-runs/gemv_sweep.py OUT [--quick] [--hot]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import torch

from graph_time import graph_us  # beside this script (its folder is first on sys.path)
from hyperloom.tools.workload.worker.levers.kernel_route import launcher

kernel = launcher(torch, "gemv")

SHAPES = {"q+k+v": (3072, 2048), "o": (2048, 2048), "gate+up": (16384, 2048), "down": (2048, 8192), "lm_head": (128256, 2048)}
TILES = [(1, 1024), (1, 2048), (2, 1024), (2, 2048), (4, 512), (4, 1024), (4, 2048), (8, 256), (8, 512), (8, 1024), (16, 256), (16, 512)]
COLD_SPAN_BYTES = 256e6  # the rotated copies' bytes: five times the H200's 50 MB L2
CUBLAS_MARGIN = 0.98  # the kernel is chosen only where it beats cuBLAS by more than 2 % (the replays' noise)


def rotating(call, copies: list[torch.Tensor]):
    """A call that reads the next copy each time it runs (at capture: each captured launch binds its own copy)."""
    turn = [0]

    def next_call():
        weight = copies[turn[0] % len(copies)]
        turn[0] += 1
        return call(weight)
    return next_call


def main(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    grid = [{"BLOCK_N": n, "BLOCK_K": k, "num_warps": warps, "num_stages": stages}
            for (n, k), warps, stages in itertools.product(TILES, [4, 8], [2, 4])]
    if args.quick:
        grid = [{"BLOCK_N": n, "BLOCK_K": k, "num_warps": 4, "num_stages": 3} for n, k in TILES[::3]]
    rows, best = [], {}
    for label, (n_out, k_in) in SHAPES.items():
        if args.shapes and label not in args.shapes.split(","):
            continue
        x = torch.randn(1, 1, k_in, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n_out, k_in, device="cuda", dtype=torch.bfloat16) / k_in ** 0.5
        mb = n_out * k_in * 2 / 1e6
        copies = [w] if args.hot else [w] + [w.clone() for _ in range(max(1, math.ceil(COLD_SPAN_BYTES / (mb * 1e6))) - 1)]
        calls = max(50, 2 * len(copies))
        want = torch.nn.functional.linear(x, w)
        cublas = graph_us(rotating(lambda weight: torch.nn.functional.linear(x, weight), copies), calls=calls)  # noqa: B023
        tried = []
        for params in grid:
            try:
                got = kernel.gemv(x, w, None, params)
                error = float((got.float() - want.float()).norm() / want.float().norm())
                us = graph_us(rotating(lambda weight: kernel.gemv(x, weight, None, params), copies), calls=calls)  # noqa: B023
            except Exception as exc:  # noqa: BLE001 - a configuration the compiler refuses: recorded, not fatal
                tried.append({"params": params, "error": repr(exc)[:200]})
                continue
            tried.append({"params": params, "us": us, "rel_l2_vs_cublas": error})
        ran = [t for t in tried if "us" in t and t["rel_l2_vs_cublas"] < 1e-2]
        winner = min(ran, key=lambda t: t["us"]) if ran else None
        if winner:
            best[f"{n_out},{k_in}"] = winner["params"] if winner["us"] < CUBLAS_MARGIN * cublas else "cublas"
        rows.append({"shape": label, "n": n_out, "k": k_in, "mb": mb, "copies": len(copies), "cublas_us": cublas,
                     "cublas_gb_s": mb / cublas * 1e3, "best": winner, "tried": tried})
        said = f"{winner['us']:7.2f} us ({mb / winner['us'] * 1e3:5.0f} GB/s) {winner['params']}" if winner else "none ran"
        print(f"{label:<8} {n_out:>6} x {k_in:<5} {mb:6.1f} MB x{len(copies):>2}: cuBLAS {cublas:7.2f} us ({mb / cublas * 1e3:5.0f} GB/s); "
              f"kernel best {said} -> {'cuBLAS' if best.get(f'{n_out},{k_in}', 'cublas') == 'cublas' else 'kernel'}", flush=True)
        del copies
        torch.cuda.empty_cache()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemv_sweep.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                     "cold": not args.hot, "rows": rows, "best": best}, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--hot", action="store_true", help="replay one copy of the weights (L2-hot where they fit)")
    parser.add_argument("--shapes", help="labels to sweep (default all): " + ",".join(SHAPES))
    main(parser.parse_args())
