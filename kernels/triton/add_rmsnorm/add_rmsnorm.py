"""Residual add + RMSNorm in Triton, as HF's Qwen2 and Llama decoder layers run them back to back:
`hidden = residual + hidden; residual = hidden; hidden = norm(hidden)`. One program per row: the sum rounded to the
residual's dtype (as the eager add is), written back into `residual` (in place, as vLLM's fused_add_rms_norm does),
its mean square in float32, then weight * (sum * rsqrt(mean + eps)) rounded to the dtype first, as HF's module does.

`add_rmsnorm(x, residual, weight, eps)` launches it on torch tensors (float32, bfloat16, float16) and returns
(normed, residual), the residual updated in place. The kernel's @triton.autotune list is the spec's search space."""

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8, 16)]


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def add_rmsnorm_kernel(x, residual, weight, y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * n_cols
    r_row = residual + row * n_cols
    y_row = y + row * n_cols
    columns = tl.arange(0, BLOCK)
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        a = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(r_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        total = (a + b).to(residual.dtype.element_ty)
        tl.store(r_row + start + columns, total, mask=mask)
        total32 = total.to(tl.float32)
        squares += total32 * total32
    rstd = 1.0 / tl.sqrt(tl.sum(squares, 0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):  # the same program wrote these columns above: its own stores are visible
        mask = start + columns < n_cols
        total = tl.load(r_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        scale = tl.load(weight + start + columns, mask=mask, other=0.0).to(tl.float32)
        normed = (total * rstd).to(residual.dtype.element_ty).to(tl.float32)
        tl.store(y_row + start + columns, (normed * scale).to(y.dtype.element_ty), mask=mask)


def launch_params(n_cols: int, params: dict | None = None) -> dict:
    """Constexprs and options of one launch: a tune winner's params ({"autotune_config": i} or BLOCK/num_warps), else a
    block of the whole row (up to 8192 columns)."""
    params = dict(params or {})
    if "autotune_config" in params:
        config = CONFIGS[int(params.pop("autotune_config"))]
        params = {**config.kwargs, "num_warps": config.num_warps, **params}
    block = min(triton.next_power_of_2(n_cols), 8192)
    return {"BLOCK": block, "num_warps": 4 if block <= 1024 else 8 if block <= 4096 else 16, **params}


_LAUNCH = PreboundKernel(add_rmsnorm_kernel.fn)


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                params: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight * rmsnorm(x + residual), x + residual); `residual` is overwritten with the sum, as vLLM's fused_add_rms_norm."""
    n_cols = x.shape[-1]
    if residual.shape != x.shape or residual.dtype != x.dtype:
        raise ValueError(f"residual is {tuple(residual.shape)} {residual.dtype}, x is {tuple(x.shape)} {x.dtype}: give a residual of x's "
                         "shape and dtype")
    if weight.shape != (n_cols,):
        raise ValueError(f"weight has shape {tuple(weight.shape)}, the rows of x have {n_cols} columns: give a weight of shape ({n_cols},)")
    if not residual.is_contiguous():
        raise ValueError("residual is updated in place and must be contiguous: pass residual.contiguous() and use the one returned")
    rows = x.reshape(-1, n_cols).contiguous()
    y = torch.empty(rows.shape, dtype=torch.promote_types(x.dtype, weight.dtype), device=x.device)
    if rows.shape[0]:
        _LAUNCH((rows.shape[0],), (rows, residual.view(-1, n_cols), weight.contiguous(), y, n_cols, eps), launch_params(n_cols, params))
    return y.reshape(x.shape), residual
