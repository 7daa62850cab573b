"""RMSNorm in Triton, as HF's Qwen2RMSNorm and LlamaRMSNorm compute it: one program per row, the row's mean square
in float32 (read in BLOCK-column chunks), then weight * (x * rsqrt(mean + eps)) rounded to x's dtype first, as
`weight * hidden.to(input_dtype)` does, so a bf16 model gets the bits its eager module gives.

`rmsnorm(x, weight, eps)` launches it on torch tensors of any leading shape (float32, bfloat16, float16).
The kernel's own @triton.autotune list is the spec's search space (tuning: autotune_config)."""

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8, 16)]


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def rmsnorm_kernel(x, weight, y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * n_cols
    y_row = y + row * n_cols
    columns = tl.arange(0, BLOCK)
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        squares += chunk * chunk
    rstd = 1.0 / tl.sqrt(tl.sum(squares, 0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        scale = tl.load(weight + start + columns, mask=mask, other=0.0).to(tl.float32)
        normed = (chunk * rstd).to(x.dtype.element_ty).to(tl.float32)  # HF rounds to the input dtype before the weight
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


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, params: dict | None = None) -> torch.Tensor:
    """weight * rmsnorm(x) over the last dimension; the result in x's dtype promoted with weight's, as HF's module returns."""
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,):
        raise ValueError(f"weight has shape {tuple(weight.shape)}, the rows of x have {n_cols} columns: give a weight of shape ({n_cols},)")
    rows = x.reshape(-1, n_cols).contiguous()
    y = torch.empty(rows.shape, dtype=torch.promote_types(x.dtype, weight.dtype), device=x.device)
    if rows.shape[0]:
            rmsnorm_kernel.fn[(rows.shape[0],)](rows, weight.contiguous(), y, n_cols, eps, **launch_params(n_cols, params))
    return y.reshape(x.shape)
