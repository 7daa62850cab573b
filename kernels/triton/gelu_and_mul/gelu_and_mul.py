"""GELU-and-mul (the gated MLP of GeGLU models) in Triton: out = gelu(gate) * up, float32 inside, gelu(gate) rounded
to the input dtype before the product, as the eager `act_fn(gate_proj(x)) * up_proj(x)` rounds it. TANH picks the
approximation: 0 is erf's exact GELU (torch's default, vLLM's gelu_and_mul), 1 the tanh form (gelu_pytorch_tanh,
vLLM's gelu_tanh_and_mul).

Two entries over one row body: `gelu_and_mul_kernel` takes vLLM's layout, x = [gate | up] of 2*d columns per row,
and `gelu_mul_kernel` takes the two projections as separate tensors. Launchers: `gelu_and_mul(x, approximate)` and
`gelu_mul(gate, up, approximate)` on torch tensors (float32, bfloat16, float16). The autotune list is the search space."""

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (512, 1024, 2048, 4096) for warps in (2, 4, 8)]


@triton.jit
def _gelu_mul_row(gate_row, up_row, out_row, d, BLOCK: tl.constexpr, TANH: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    for start in range(0, d, BLOCK):
        mask = start + columns < d
        g = tl.load(gate_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(up_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        if TANH:
            inner = 0.7978845608028654 * (g + 0.044715 * g * g * g)  # sqrt(2 / pi) * (g + 0.044715 g³)
            act = g * (1.0 - 1.0 / (1.0 + tl.exp(2.0 * inner)))  # 0.5 g (1 + tanh(inner)), tanh through exp
        else:
            act = 0.5 * g * (1.0 + tl.math.erf(g * 0.7071067811865476))
        act = act.to(gate_row.dtype.element_ty).to(tl.float32)
        tl.store(out_row + start + columns, (act * u).to(out_row.dtype.element_ty), mask=mask)


@triton.autotune(configs=CONFIGS, key=["d"])
@triton.jit
def gelu_and_mul_kernel(x, out, d, BLOCK: tl.constexpr, TANH: tl.constexpr = 0):
    row = tl.program_id(0).to(tl.int64)
    _gelu_mul_row(x + row * 2 * d, x + row * 2 * d + d, out + row * d, d, BLOCK, TANH)


@triton.jit
def gelu_mul_kernel(gate, up, out, d, BLOCK: tl.constexpr, TANH: tl.constexpr = 0):
    row = tl.program_id(0).to(tl.int64)
    _gelu_mul_row(gate + row * d, up + row * d, out + row * d, d, BLOCK, TANH)


def launch_params(d: int, approximate: str, params: dict | None = None) -> dict:
    """Constexprs and options of one launch: a tune winner's params ({"autotune_config": i} or BLOCK/num_warps), else
    a block of up to 2048 columns; TANH from `approximate` ("none" or "tanh", torch's names)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate={approximate!r}: use 'none' (erf, torch's default) or 'tanh', as "
                         "torch.nn.functional.gelu names them")
    params = dict(params or {})
    if "autotune_config" in params:
        config = CONFIGS[int(params.pop("autotune_config"))]
        params = {**config.kwargs, "num_warps": config.num_warps, **params}
    block = min(triton.next_power_of_2(d), 2048)
    return {"BLOCK": block, "num_warps": 4 if block <= 1024 else 8, "TANH": int(approximate == "tanh"), **params}


_PAIRED, _SEPARATE = PreboundKernel(gelu_and_mul_kernel.fn), PreboundKernel(gelu_mul_kernel)


def gelu_and_mul(x: torch.Tensor, approximate: str = "none", params: dict | None = None) -> torch.Tensor:
    """gelu(x[..., :d]) * x[..., d:] for x of 2*d columns, as vLLM's gelu_and_mul (approximate='tanh': gelu_tanh_and_mul)."""
    if x.shape[-1] % 2:
        raise ValueError(f"x has {x.shape[-1]} columns, an odd number: gelu_and_mul splits the last dimension in two halves [gate | up]")
    d = x.shape[-1] // 2
    rows = x.reshape(-1, 2 * d).contiguous()
    out = torch.empty((rows.shape[0], d), dtype=x.dtype, device=x.device)
    if rows.shape[0] and d:
        _PAIRED((rows.shape[0],), (rows, out, d), launch_params(d, approximate, params))
    return out.reshape(*x.shape[:-1], d)


def gelu_mul(gate: torch.Tensor, up: torch.Tensor, approximate: str = "none", params: dict | None = None) -> torch.Tensor:
    """gelu(gate) * up for two tensors of one shape and dtype, as a GeGLU MLP computes them."""
    if gate.shape != up.shape or gate.dtype != up.dtype:
        raise ValueError(f"gate is {tuple(gate.shape)} {gate.dtype}, up is {tuple(up.shape)} {up.dtype}: give two tensors of one "
                         "shape and dtype")
    d = gate.shape[-1]
    g, u = gate.reshape(-1, d).contiguous(), up.reshape(-1, d).contiguous()
    out = torch.empty_like(g)
    if g.shape[0] and d:
        _SEPARATE((g.shape[0],), (g, u, out, d), launch_params(d, approximate, params))
    return out.reshape(gate.shape)
