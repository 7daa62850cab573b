"""Does the fusion library's RMSNorm give the very bits of HF's eager Qwen2RMSNorm on this GPU? Per shape, random bf16
rows (a random scale each trial): the rows whose output differs in any bit, for the launcher as it runs (the sum of
squares in eager torch's order where eager_reduce_lanes models it) and for the BLOCK-chunk order; the rows whose
mean square differs from torch's x.float().pow(2).mean(-1), for the modelled lane count and for every other one (so a
wrong model names the right count); and how often Triton's rsqrt differs from torch.rsqrt.

    python3 lab/rmsnorm-eager-bits/eager_bits.py [--trials 200] > eager_bits.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from hyperloom.tools.triton.entry import load_module

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels" / "triton"
SHAPES = [(1, 1536), (16, 1536), (256, 1536), (1, 4096), (512, 4096), (1, 896), (1, 5000), (1, 2048)]
LANE_COUNTS = (32, 64, 128, 256, 512)


LIBRARY = load_module(str(KERNELS / "rmsnorm" / "rmsnorm.py"))


@triton.jit
def _rsqrt(x, out, n):
    at = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    tl.store(out + at, tl.math.rsqrt(tl.load(x + at, mask=at < n)), mask=at < n)


def _rows_differing(a: torch.Tensor, b: torch.Tensor) -> int:
    return int((a.reshape(a.shape[0], -1).view(torch.int16 if a.dtype == torch.bfloat16 else torch.int32)
                != b.reshape(b.shape[0], -1).view(torch.int16 if b.dtype == torch.bfloat16 else torch.int32)).any(-1).sum())


def shape_figures(rows: int, n_cols: int, trials: int) -> dict:
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    norm = Qwen2RMSNorm(n_cols).cuda().to(torch.bfloat16)
    lanes = LIBRARY.eager_reduce_lanes(rows, n_cols)
    counts = {"launcher": 0, "block_order": 0, **{f"mean_lanes_{w}": 0 for w in LANE_COUNTS}}
    for trial in range(trials):
        torch.manual_seed(trial)
        norm.weight.data.uniform_(0.5, 1.5)
        x = torch.randn(rows, n_cols, device="cuda", dtype=torch.bfloat16) * float(torch.empty(1).uniform_(0.1, 10.0))
        eager = norm(x)
        counts["launcher"] += _rows_differing(LIBRARY.rmsnorm(x, norm.weight, norm.variance_epsilon), eager)
        counts["block_order"] += _rows_differing(LIBRARY.rmsnorm(x, norm.weight, norm.variance_epsilon, {"LANES": 0}), eager)
        torch_mean = x.float().pow(2).mean(-1)
        for width in LANE_COUNTS:
            if width * 4 > 2 * triton.next_power_of_2(n_cols):
                continue
            ours = torch.empty(rows, device="cuda", dtype=torch.float32)
            LIBRARY.mean_square_kernel[(rows,)](x, ours, n_cols, 1024, width, -(-n_cols // (4 * width)))
            counts[f"mean_lanes_{width}"] += int((ours.view(torch.int32) != torch_mean.view(torch.int32)).sum())
    return {"rows": rows, "cols": n_cols, "modelled_lanes": lanes, "rows_tried": rows * trials,
            "rows_differing": counts}


def rsqrt_figures(count: int) -> dict:
    torch.manual_seed(0)
    x = torch.exp(torch.empty(count, device="cuda").uniform_(-20.0, 20.0))
    ours = torch.empty_like(x)
    _rsqrt[(triton.cdiv(count, 1024),)](x, ours, count)
    return {"values": count, "triton_rsqrt_differs": int((ours != torch.rsqrt(x)).sum()),
            "one_over_sqrt_differs": int((1.0 / torch.sqrt(x) != torch.rsqrt(x)).sum())}


def capture(path: Path) -> None:
    """Random float32 squares and torch's mean of them over the last dimension, per shape: what an offline model of
    torch's reduction order is checked against."""
    import numpy as np

    arrays = {}
    for rows, cols, trials in ((1, 1536, 64), (256, 1536, 1), (1, 4096, 32), (1, 896, 32)):
        torch.manual_seed(rows * cols)
        squares = torch.randn(trials, rows, cols, device="cuda").to(torch.bfloat16).float().pow(2)
        means = torch.stack([squares[t].mean(-1) for t in range(trials)])
        arrays[f"squares_{rows}x{cols}"], arrays[f"means_{rows}x{cols}"] = squares.cpu().numpy(), means.cpu().numpy()
    np.savez_compressed(path, torch_version=np.array(torch.__version__), **arrays)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--capture", type=Path, help="also write torch's mean square of random float32 rows to this .npz")
    args = parser.parse_args()
    if args.capture:
        capture(args.capture)
    with torch.inference_mode():
        figures = {"rsqrt": rsqrt_figures(1 << 22),
                   "shapes": [shape_figures(rows, cols, args.trials if rows < 64 else max(args.trials // 10, 1))
                              for rows, cols in SHAPES]}
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
