"""Host time of one call, asynchronous (the GPU is not waited for inside the loop), at decode's shapes (one token,
bf16): HF's eager Qwen2RMSNorm.forward beside the fusion library's rmsnorm launcher, and HF's act_fn(gate) * up beside
silu_mul; each library launch also through Triton's binder (kernel[grid](...)), which the launchers skip. A decode
step is bound by such launches, so this is what an integration can save per call, at most.

    python3 lab/device-runs/launch_cost.py [--hidden 1536] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from hyperloom.tools.triton.entry import load_module

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "kernels" / "triton"


def per_call_us(function, calls: int) -> float:
    """Best of three rounds of `calls` asynchronous calls, µs each (the queue drained between rounds)."""
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - started) / calls)
        torch.cuda.synchronize()
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--intermediate", type=int, default=8960)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    from transformers.activations import ACT2FN
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    rmsnorm, silu = (load_module(str(LIBRARY / name / f"{name}.py")) for name in ("rmsnorm", "silu_and_mul"))

    def binder_rmsnorm(x, weight, eps):  # the same launch through Triton's binder, kernel[grid](...), as before
        rows = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(rows)
        rmsnorm.rmsnorm_kernel.fn[(rows.shape[0],)](rows, weight, y, rows.shape[1], eps,
                                                    **rmsnorm.launch_params(rows.shape[1], None, rows.shape[0]))
        return y.reshape(x.shape)

    def binder_silu_mul(gate, up):
        g, u = gate.reshape(-1, gate.shape[-1]), up.reshape(-1, up.shape[-1])
        out = torch.empty_like(g)
        silu.silu_mul_kernel[(g.shape[0],)](g, u, out, g.shape[1], **silu.launch_params(g.shape[1]))
        return out.reshape(gate.shape)

    norm = Qwen2RMSNorm(args.hidden).cuda().to(torch.bfloat16)
    x = torch.randn(1, 1, args.hidden, device="cuda", dtype=torch.bfloat16)
    gate, up = (torch.randn(1, 1, args.intermediate, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    act = ACT2FN["silu"]
    with torch.inference_mode():
        bound = (x.view(1, -1), norm.weight, torch.empty_like(x).view(1, -1), args.hidden, norm.variance_epsilon)
        meta = rmsnorm.launch_params(args.hidden, None, 1)
        assert torch.equal(norm(x), rmsnorm.rmsnorm(x, norm.weight, norm.variance_epsilon))
        assert torch.equal(act(gate) * up, silu.silu_mul(gate, up))
        assert torch.equal(norm(x), binder_rmsnorm(x, norm.weight, norm.variance_epsilon))
        figures = {
            "eager_rmsnorm_us": per_call_us(lambda: norm(x), args.calls),
            "triton_rmsnorm_us": per_call_us(lambda: rmsnorm.rmsnorm(x, norm.weight, norm.variance_epsilon), args.calls),
            "triton_rmsnorm_binder_us": per_call_us(lambda: binder_rmsnorm(x, norm.weight, norm.variance_epsilon), args.calls),
            "eager_silu_mul_us": per_call_us(lambda: act(gate) * up, args.calls),
            "triton_silu_mul_us": per_call_us(lambda: silu.silu_mul(gate, up), args.calls),
            "triton_silu_mul_binder_us": per_call_us(lambda: binder_silu_mul(gate, up), args.calls),
            "torch_empty_us": per_call_us(lambda: torch.empty_like(x), args.calls),
            "rmsnorm_launch_params_us": per_call_us(lambda: rmsnorm.launch_params(args.hidden, None, 1), args.calls),
            "rmsnorm_prebound_launch_only_us": per_call_us(lambda: rmsnorm._LAUNCH((1,), bound, meta), args.calls),
        }
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}, indent=1))


if __name__ == "__main__":
    main()
