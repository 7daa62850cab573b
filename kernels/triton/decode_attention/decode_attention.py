"""Attention for one decode position over a KV cache, in Triton: the query heads of each KV head (grouped-query
attention read natively, no repeated K/V) against the cache, skipping every block of slots the mask leaves out, so a
static cache is read only where it is filled. Flash-decoding: the cache's slots are split over programs until the
device has about two a multiprocessor, each keeping its running max, sum and weighted values, then combined by a
second kernel.

    out = softmax(scale * q k^T + mask) v      for q of [batch, heads, 1, dim], k and v of [batch, kv_heads, slots, dim]

The mask is None, a bool tensor (True: attend) or an additive float one (a value at or below -1e30 leaves the slot
out), of [batch or 1, 1, 1, slots]. Scores accumulate in float32 from the inputs' dtype (tensor-core dot products for
bfloat16 and float16, IEEE float32 for float32), the probabilities are rounded to the values' dtype for the second dot
product, as flash attention rounds them (under Triton's interpreter both dot products take float32 operands). One
program per (batch row, KV head, split), its query heads padded to 16 rows (the dot product's smallest tile).
Launcher: `decode_attention(q, k, v, mask, scale)` -> [batch, 1, heads, dim] (the layout transformers' attention functions return)."""

import os

import torch
import triton
import triton.language as tl

NO_MASK, KEEP_MASK, ADDITIVE_MASK = 0, 1, 2
LEFT_OUT = tl.constexpr(-1.0e30)  # an additive mask's value at or below this leaves its slot out (torch.finfo(dtype).min, -inf)
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # Triton 3.9's interpreter computes bfloat16 dot products wrong: float32 there


@triton.jit
def decode_attention_kernel(q, k, v, mask, out, part_max, part_sum, part_acc,
                            kv_heads, group, slots, head_dim, split_slots, splits, scale,
                            q_sb, q_sh, k_sb, k_sh, k_sl, v_sb, v_sh, v_sl, m_sb, m_sl,
                            MASK: tl.constexpr, SPLIT: tl.constexpr, IEEE: tl.constexpr,
                            BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # batch row * kv_heads + kv head
    split = tl.program_id(1)
    b, h = row // kv_heads, row % kv_heads
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    g_in, d_in = g < group, d < head_dim
    heads = kv_heads * group
    head = h * group + g
    qv = tl.load(q + b * q_sb + head[:, None] * q_sh + d[None, :], mask=g_in[:, None] & d_in[None, :], other=0.0)
    best = tl.full([BLOCK_G], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    first = split * split_slots
    last = tl.minimum(first + split_slots, slots)
    for start in range(first, last, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        keep = n < last
        bias = tl.zeros([BLOCK_N], tl.float32)
        if MASK == 1:
            keep = keep & (tl.load(mask + b * m_sb + n * m_sl, mask=keep, other=0) != 0)
        if MASK == 2:
            bias = tl.load(mask + b * m_sb + n * m_sl, mask=keep, other=LEFT_OUT).to(tl.float32)
            keep = keep & (bias > LEFT_OUT)
        if tl.max(keep.to(tl.int32), axis=0) > 0:  # a block the mask leaves out entirely is not read
            kt = tl.load(k + b * k_sb + h * k_sh + n[None, :] * k_sl + d[:, None], mask=keep[None, :] & d_in[:, None], other=0.0)
            if IEEE:
                scores = tl.dot(qv.to(tl.float32), kt.to(tl.float32), input_precision="ieee")
            else:
                scores = tl.dot(qv, kt)
            scores = tl.where(keep[None, :], scores * scale + bias[None, :], float("-inf"))
            top = tl.maximum(best, tl.max(scores, axis=1))
            shift = tl.where(top == float("-inf"), 0.0, top)  # a row with nothing kept yet stays at zero weight
            p = tl.exp(scores - shift[:, None])
            rescale = tl.exp(best - shift)
            total = total * rescale + tl.sum(p, axis=1)
            vt = tl.load(v + b * v_sb + h * v_sh + n[:, None] * v_sl + d[None, :], mask=keep[:, None] & d_in[None, :], other=0.0)
            if IEEE:
                acc = acc * rescale[:, None] + tl.dot(p.to(vt.dtype).to(tl.float32), vt.to(tl.float32), input_precision="ieee")
            else:
                acc = acc * rescale[:, None] + tl.dot(p.to(vt.dtype), vt)
            best = top
    if SPLIT:
        at = (b * heads + head) * splits + split
        tl.store(part_max + at, best, mask=g_in)
        tl.store(part_sum + at, total, mask=g_in)
        tl.store(part_acc + at[:, None] * head_dim + d[None, :], acc, mask=g_in[:, None] & d_in[None, :])
    else:
        result = acc / tl.where(total > 0.0, total, 1.0)[:, None]  # no slot kept: zeros
        tl.store(out + (b * heads + head[:, None]) * head_dim + d[None, :], result.to(out.dtype.element_ty),
                 mask=g_in[:, None] & d_in[None, :])


@triton.jit
def combine_kernel(part_max, part_sum, part_acc, out, splits, head_dim, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """Each (batch row, head): the splits' partial sums rescaled to their common max and added."""
    row = tl.program_id(0).to(tl.int64)
    s = tl.arange(0, BLOCK_S)
    d = tl.arange(0, BLOCK_D)
    s_in, d_in = s < splits, d < head_dim
    best = tl.load(part_max + row * splits + s, mask=s_in, other=float("-inf"))
    top = tl.max(best, axis=0)
    weight = tl.where(s_in & (best > float("-inf")), tl.exp(best - top), 0.0)
    total = tl.sum(tl.load(part_sum + row * splits + s, mask=s_in, other=0.0) * weight, axis=0)
    acc = tl.load(part_acc + (row * splits + s[:, None]) * head_dim + d[None, :], mask=s_in[:, None] & d_in[None, :], other=0.0)
    result = tl.sum(acc * weight[:, None], axis=0) / tl.where(total > 0.0, total, 1.0)
    tl.store(out + row * head_dim + d, result.to(out.dtype.element_ty), mask=d_in)


def launch_params(rows: int, slots: int, processors: int, params: dict | None = None) -> dict:
    """Tile and split of one launch for `rows` (batch rows x KV heads) programs before any split: a tune winner's params
    (BLOCK_N, SPLIT_SLOTS, num_warps), else 64 slots a block and the cache split until about two programs a
    multiprocessor run (`processors`), a block a split at most: at batch 1 a 1.2B decoder has 8 KV heads, and one
    program each walking a 192-slot cache took 8.3 us a layer on the H200 where cuDNN took 6 (results/h200/roof)."""
    chosen = {"BLOCK_N": 64, "num_warps": 4, **(params or {})}
    if "SPLIT_SLOTS" not in chosen:
        blocks = triton.cdiv(slots, chosen["BLOCK_N"])
        splits = max(1, min(blocks, triton.cdiv(2 * processors, max(rows, 1))))
        chosen["SPLIT_SLOTS"] = triton.cdiv(blocks, splits) * chosen["BLOCK_N"]
    chosen["SPLIT_SLOTS"] = max(chosen["BLOCK_N"], triton.cdiv(int(chosen["SPLIT_SLOTS"]), chosen["BLOCK_N"]) * chosen["BLOCK_N"])
    return chosen


def processors(device: torch.device) -> int:
    """The device's multiprocessors (compute units); a CPU under the interpreter counts as 4."""
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


def mask_kind(mask: torch.Tensor | None) -> int:
    return NO_MASK if mask is None else KEEP_MASK if mask.dtype == torch.bool else ADDITIVE_MASK


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float,
                     params: dict | None = None) -> torch.Tensor:
    """softmax(scale * q k^T + mask) v for one query position: q [batch, heads, 1, dim], k and v [batch, kv_heads, slots,
    dim] (heads a multiple of kv_heads), mask None or [batch or 1, 1, 1, slots]; returns [batch, 1, heads, dim]."""
    problem = unsupported(q, k, v, mask)
    if problem:
        raise ValueError(problem)
    batch, heads, _, dim = q.shape
    kv_heads, slots = k.shape[1], k.shape[2]
    chosen = launch_params(batch * kv_heads, slots, processors(q.device), params)
    splits = triton.cdiv(slots, chosen["SPLIT_SLOTS"])
    out = torch.empty(batch, 1, heads, dim, dtype=q.dtype, device=q.device)
    if mask is None:
        mask_arg, m_sb, m_sl = q, 0, 0  # never read
    else:
        mask_arg = mask.view(torch.uint8) if mask.dtype == torch.bool else mask
        m_sb, m_sl = (mask.stride(0) if mask.shape[0] > 1 else 0), mask.stride(-1)
    if splits > 1:
        part_max = torch.empty(batch * heads * splits, dtype=torch.float32, device=q.device)
        part_sum = torch.empty_like(part_max)
        part_acc = torch.empty(batch * heads * splits, dim, dtype=torch.float32, device=q.device)
    else:
        part_max = part_sum = part_acc = out  # never written
    block_d = max(16, triton.next_power_of_2(dim))
    decode_attention_kernel[(batch * kv_heads, splits)](
        q, k, v, mask_arg, out, part_max, part_sum, part_acc,
        kv_heads, heads // kv_heads, slots, dim, chosen["SPLIT_SLOTS"], splits, float(scale),
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2), m_sb, m_sl,
        MASK=mask_kind(mask), SPLIT=splits > 1, IEEE=q.dtype == torch.float32 or INTERPRETED,
        BLOCK_G=max(16, triton.next_power_of_2(heads // kv_heads)), BLOCK_N=chosen["BLOCK_N"], BLOCK_D=block_d,
        num_warps=chosen["num_warps"])
    if splits > 1:
        combine_kernel[(batch * heads,)](part_max, part_sum, part_acc, out, splits, dim,
                                         BLOCK_S=max(2, triton.next_power_of_2(splits)), BLOCK_D=block_d)
    return out


def unsupported(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> str:
    """Why this kernel does not take these tensors (empty: it does)."""
    if q.dim() != 4 or k.dim() != 4 or v.shape != k.shape:
        return (f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: give q [batch, heads, 1, dim] and k, v [batch, "
                "kv_heads, slots, dim]")
    batch, heads, positions, dim = q.shape
    if positions != 1:
        return f"{positions} query positions: the kernel attends for one (a decode step)"
    if k.shape[0] != batch or k.shape[3] != dim or heads % k.shape[1]:
        return f"q {tuple(q.shape)} and k {tuple(k.shape)}: the batch and dim must match and heads be a multiple of kv_heads"
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"q, k, v are {q.dtype}, {k.dtype}, {v.dtype}: one of float32, bfloat16, float16 for all three"
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return "q, k or v is strided along dim: the kernel reads rows of dim contiguous"
    if mask is not None:
        if mask.dim() != 4 or mask.shape[1] != 1 or mask.shape[2] != 1 or mask.shape[3] != k.shape[2] or mask.shape[0] not in (1, batch):
            return f"mask {tuple(mask.shape)}: the kernel takes one mask row a batch row, [batch or 1, 1, 1, {k.shape[2]}]"
        if mask.dtype != torch.bool and not mask.is_floating_point():
            return f"mask of {mask.dtype}: give a bool mask (True: attend) or an additive float one"
    return ""
