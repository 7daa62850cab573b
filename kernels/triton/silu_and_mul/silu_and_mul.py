"""SiLU-and-mul (the gated MLP's activation) in Triton: out = silu(gate) * up, float32 inside, silu(gate) rounded to
the input dtype before the product, as HF's `act_fn(gate_proj(x)) * up_proj(x)` and vLLM's silu_and_mul round it.

Two entries over one row body: `silu_and_mul_kernel` takes vLLM's layout, x = [gate | up] of 2*d columns per row,
and `silu_mul_kernel` takes HF's two projections as separate tensors. Launchers: `silu_and_mul(x)` and
`silu_mul(gate, up)` on torch tensors (float32, bfloat16, float16), through each compiled kernel's own launcher (no
Triton binder a call: hyperloom.core.triton_launch). The spec's search space is the autotune list."""

import functools

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (512, 1024, 2048, 4096) for warps in (2, 4, 8)]


@triton.jit
def _silu_mul_row(gate_row, up_row, out_row, d, BLOCK: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    for start in range(0, d, BLOCK):
        mask = start + columns < d
        g = tl.load(gate_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(up_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        act = (g / (1.0 + tl.exp(-g))).to(gate_row.dtype.element_ty).to(tl.float32)
        tl.store(out_row + start + columns, (act * u).to(out_row.dtype.element_ty), mask=mask)


@triton.autotune(configs=CONFIGS, key=["d"])
@triton.jit
def silu_and_mul_kernel(x, out, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    _silu_mul_row(x + row * 2 * d, x + row * 2 * d + d, out + row * d, d, BLOCK)


@triton.jit
def silu_mul_kernel(gate, up, out, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    _silu_mul_row(gate + row * d, up + row * d, out + row * d, d, BLOCK)


def launch_params(d: int, params: dict | None = None) -> dict:
    """Constexprs and options of one launch: a tune winner's params ({"autotune_config": i} or BLOCK/num_warps), else
    a block of up to 2048 columns."""
    params = dict(params or {})
    if "autotune_config" in params:
        config = CONFIGS[int(params.pop("autotune_config"))]
        params = {**config.kwargs, "num_warps": config.num_warps, **params}
    block = min(triton.next_power_of_2(d), 2048)
    return {"BLOCK": block, "num_warps": 4 if block <= 1024 else 8, **params}


@functools.lru_cache(maxsize=256)
def _cached_params(d: int, params: tuple) -> dict:
    """launch_params once per (width, params): a decode step calls the launcher hundreds of times alike."""
    return launch_params(d, dict(params))


_PAIRED, _SEPARATE = PreboundKernel(silu_and_mul_kernel.fn), PreboundKernel(silu_mul_kernel)


def silu_and_mul(x: torch.Tensor, params: dict | None = None) -> torch.Tensor:
    """silu(x[..., :d]) * x[..., d:] for x of 2*d columns, as vLLM's silu_and_mul."""
    if x.shape[-1] % 2:
        raise ValueError(f"x has {x.shape[-1]} columns, an odd number: silu_and_mul splits the last dimension in two halves [gate | up]")
    d = x.shape[-1] // 2
    rows = x.reshape(-1, 2 * d).contiguous()
    out = torch.empty((rows.shape[0], d), dtype=x.dtype, device=x.device)
    if rows.shape[0] and d:
        _PAIRED((rows.shape[0],), (rows, out, d), _cached_params(d, tuple(sorted(params.items())) if params else ()))
    return out.reshape(*x.shape[:-1], d)


def silu_mul(gate: torch.Tensor, up: torch.Tensor, params: dict | None = None) -> torch.Tensor:
    """silu(gate) * up for two tensors of one shape and dtype, as HF's gated MLP (LlamaMLP, Qwen2MLP) computes them."""
    if gate.shape != up.shape or gate.dtype != up.dtype:
        raise ValueError(f"gate is {tuple(gate.shape)} {gate.dtype}, up is {tuple(up.shape)} {up.dtype}: give two tensors of one "
                         "shape and dtype")
    d = gate.shape[-1]
    g, u = gate.reshape(-1, d).contiguous(), up.reshape(-1, d).contiguous()
    out = torch.empty_like(g)
    if g.shape[0] and d:
        _SEPARATE((g.shape[0],), (g, u, out, d), _cached_params(d, tuple(sorted(params.items())) if params else ()))
    return out.reshape(gate.shape)
