"""Rotary position embedding in Triton, neox / HF `rotate_half` style with cos and sin given: for x of
[batch, heads, seq, dim], out = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] over the two halves of dim,
cos and sin of [batch, seq, dim] shared by the heads. Each product and the sum are rounded to the output dtype, as the
eager expression rounds them, so a bf16 model gets the bits HF's apply_rotary_pos_emb gives.

One program per (batch, position): its cos and sin row read once, the heads BLOCK_H at a time. x may be a strided
view (HF's q after transpose(1, 2)); the output is contiguous. Launchers: `rotary(x, cos, sin)` and
`apply_rotary_pos_emb(q, k, cos, sin)` (HF's signature, unsqueeze_dim 1) on torch tensors (float32, bfloat16, float16)."""

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel


def _half(head_dim: int) -> int:
    """HALF, the block of one half of a head (a power of two)."""
    return triton.next_power_of_2(max(head_dim // 2, 1))


@triton.heuristics({"HALF": lambda args: _half(args["head_dim"])})
@triton.jit
def rotary_kernel(x, cos, sin, out, heads, seq, head_dim, stride_b, stride_h, stride_s, cos_stride_b,
                  BLOCK_H: tl.constexpr, HALF: tl.constexpr):
    position = tl.program_id(0).to(tl.int64)
    b, s = position // seq, position % seq
    half = head_dim // 2
    columns = tl.arange(0, HALF)
    column_mask = columns < half
    c_row = cos + b * cos_stride_b + s * head_dim
    s_row = sin + b * cos_stride_b + s * head_dim
    cos1 = tl.load(c_row + columns, mask=column_mask, other=0.0).to(tl.float32)[None, :]
    cos2 = tl.load(c_row + half + columns, mask=column_mask, other=0.0).to(tl.float32)[None, :]
    sin1 = tl.load(s_row + columns, mask=column_mask, other=0.0).to(tl.float32)[None, :]
    sin2 = tl.load(s_row + half + columns, mask=column_mask, other=0.0).to(tl.float32)[None, :]
    dtype = out.dtype.element_ty
    for h0 in range(0, heads, BLOCK_H):
        h = h0 + tl.arange(0, BLOCK_H).to(tl.int64)
        mask = (h < heads)[:, None] & column_mask[None, :]
        x_at = x + b * stride_b + s * stride_s + h[:, None] * stride_h + columns[None, :]
        out_at = out + ((b * heads + h[:, None]) * seq + s) * head_dim + columns[None, :]
        x1 = tl.load(x_at, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(x_at + half, mask=mask, other=0.0).to(tl.float32)
        first = (x1 * cos1).to(dtype).to(tl.float32) + (-x2 * sin1).to(dtype).to(tl.float32)
        second = (x2 * cos2).to(dtype).to(tl.float32) + (x1 * sin2).to(dtype).to(tl.float32)
        tl.store(out_at, first.to(dtype), mask=mask)
        tl.store(out_at + half, second.to(dtype), mask=mask)


def launch_params(heads: int, params: dict | None = None) -> dict:
    """Constexprs and options of one launch: a tune winner's params (BLOCK_H, num_warps), else every head at once (up to 16)."""
    block_h = min(triton.next_power_of_2(heads), 16)
    return {"BLOCK_H": block_h, "num_warps": 4 if block_h >= 8 else 2, **(params or {})}


_LAUNCH = PreboundKernel(rotary_kernel.fn)  # the heuristic's HALF given by the launcher


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, params: dict | None = None) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin for x of [batch, heads, seq, dim] and cos, sin of [batch or 1, seq, dim] (or [seq, dim])."""
    if x.dim() != 4 or x.shape[-1] % 2:
        raise ValueError(f"x has shape {tuple(x.shape)}: give [batch, heads, seq, dim] with an even dim (the two halves rotate)")
    batch, heads, seq, dim = x.shape
    cos, sin = (t.unsqueeze(0) if t.dim() == 2 else t for t in (cos, sin))
    if cos.shape != sin.shape or cos.shape[1:] != (seq, dim) or cos.shape[0] not in (1, batch):
        raise ValueError(f"cos is {tuple(cos.shape)}, sin {tuple(sin.shape)}, x {tuple(x.shape)}: give cos and sin of [{batch} or 1, "
                         f"{seq}, {dim}]")
    if x.stride(-1) != 1:
        x = x.contiguous()
    cos, sin = cos.contiguous(), sin.contiguous()
    out = torch.empty((batch, heads, seq, dim), dtype=torch.promote_types(x.dtype, cos.dtype), device=x.device)
    if out.numel():
        _LAUNCH((batch * seq,), (x, cos, sin, out, heads, seq, dim, x.stride(0), x.stride(1), x.stride(2),
                                 0 if cos.shape[0] == 1 else seq * dim), {"HALF": _half(dim), **launch_params(heads, params)})
    return out


def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, position_ids: object = None,
                         unsqueeze_dim: int = 1, params: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """HF's apply_rotary_pos_emb for q and k of [batch, heads, seq, dim] (unsqueeze_dim 1, the layout HF's Llama and Qwen2 use)."""
    del position_ids  # HF's argument, unused there too
    if unsqueeze_dim != 1:
        raise ValueError(f"unsqueeze_dim={unsqueeze_dim}: this kernel takes q and k as [batch, heads, seq, dim] (unsqueeze_dim 1)")
    return rotary(q, cos, sin, params), rotary(k, cos, sin, params)
