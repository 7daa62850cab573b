"""LayerNorm in Triton, as torch.nn.functional.layer_norm computes it over the last dimension: one program per row,
the mean and then the variance (of x - mean, a second pass: no cancellation) in float32 over BLOCK-column chunks,
y = (x - mean) * rsqrt(var + eps) * weight + bias, rounded once to y's dtype.

`layernorm(x, weight, bias, eps)` launches it on torch tensors of any leading shape (float32, bfloat16, float16);
bias may be None. The kernel's own @triton.autotune list is the spec's search space (tuning: autotune_config)."""

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8, 16)]


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def layernorm_kernel(x, weight, bias, y, n_cols, eps, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr = True):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * n_cols
    y_row = y + row * n_cols
    columns = tl.arange(0, BLOCK)
    sums = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        sums += tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(sums, 0) / n_cols
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        centred = tl.where(mask, tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        squares += centred * centred
    rstd = 1.0 / tl.sqrt(tl.sum(squares, 0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        out = (chunk - mean) * rstd * tl.load(weight + start + columns, mask=mask, other=0.0).to(tl.float32)
        if HAS_BIAS:
            out += tl.load(bias + start + columns, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + columns, out.to(y.dtype.element_ty), mask=mask)


def launch_params(n_cols: int, params: dict | None = None) -> dict:
    """Constexprs and options of one launch: a tune winner's params ({"autotune_config": i} or BLOCK/num_warps), else a
    block of the whole row (up to 8192 columns)."""
    params = dict(params or {})
    if "autotune_config" in params:
        config = CONFIGS[int(params.pop("autotune_config"))]
        params = {**config.kwargs, "num_warps": config.num_warps, **params}
    block = min(triton.next_power_of_2(n_cols), 8192)
    return {"BLOCK": block, "num_warps": 4 if block <= 1024 else 8 if block <= 4096 else 16, **params}


_LAUNCH = PreboundKernel(layernorm_kernel.fn)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, eps: float = 1e-5,
              params: dict | None = None) -> torch.Tensor:
    """F.layer_norm(x, (n,), weight, bias, eps) over the last dimension, in x's dtype."""
    n_cols = x.shape[-1]
    for name, tensor in (("weight", weight), ("bias", bias)):
        if tensor is not None and tensor.shape != (n_cols,):
            raise ValueError(f"{name} has shape {tuple(tensor.shape)}, the rows of x have {n_cols} columns: give a {name} of "
                             f"shape ({n_cols},)")
    rows = x.reshape(-1, n_cols).contiguous()
    y = torch.empty_like(rows)
    if rows.shape[0]:
        weight = weight.contiguous()
        _LAUNCH((rows.shape[0],), (rows, weight, weight if bias is None else bias.contiguous(), y, n_cols, eps),
                {"HAS_BIAS": bias is not None, **launch_params(n_cols, params)})
    return y.reshape(x.shape)
