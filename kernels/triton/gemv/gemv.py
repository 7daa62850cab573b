"""A linear layer for a few rows (a decode step's tokens), in Triton: y = x W^T (+ b) for x of [rows, K], rows at most
MAX_ROWS, W of [N, K] as torch.nn.Linear stores it. At decode the layer is a matrix-vector product bound by the
weights' bytes: each program streams BLOCK_N rows of W along K (vector loads along the contiguous K, pipelined over
num_stages), one row of x: products accumulated elementwise in float32 and summed once at the end; a few rows: a
tensor-core dot product per tile, the rows padded to 16. The output is rounded once to x's dtype, as cuBLAS rounds it.
An RMSNorm before the layer may be folded in (`norm`): each program normalizes the rows itself (a row is a few KB),
so the norm's own kernel and its launch leave the decode step.

A gated MLP's activation may be folded in (`up`): x is the gate, each program computes silu(gate) * up as it streams,
so the activation's kernel leaves the step too.

Launcher: `gemv(x, weight, bias=None, params=None, norm=None, eps=1e-6, up=None)` for x of [..., K] whose leading
dimensions hold at most MAX_ROWS rows, weight [N, K] (float32, bfloat16, float16; K contiguous), bias [N] or None;
returns [..., N]."""

import functools
import json
import os
from pathlib import Path

import torch
import triton
import triton.language as tl

MAX_ROWS = 8  # more rows than this: the layer is a GEMM, cuBLAS's work
TUNED: dict[tuple[int, int], dict | str] = {}  # (N, K) -> launch params, or "cublas": a caller's choice (roof_decode.py --gemv-params)
# device name -> {"measured": how, "shapes": {"N,K": params or "cublas"}}, as lab/device-runs/gemv_sweep.py measured them
SHIPPED = Path(__file__).with_name("tuned.json")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # Triton 3.9's interpreter computes bfloat16 dot products wrong: float32 there


@triton.jit
def gemv_kernel(x, up, w, bias, norm, y, rows, n_out, k_in, x_stride, up_stride, w_stride, eps, HAS_BIAS: tl.constexpr, NORM: tl.constexpr,
                ACT: tl.constexpr, ONE_ROW: tl.constexpr, F32_DOT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    n = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_in = n < n_out
    dtype = x.dtype.element_ty
    if ONE_ROW:
        scale = 1.0
        if NORM:  # the row's RMS first (x is a few KB, read again from L2 below)
            squares = tl.zeros([BLOCK_K], tl.float32)
            for start in range(0, k_in, BLOCK_K):
                k = start + tl.arange(0, BLOCK_K)
                xk = tl.load(x + k, mask=k < k_in, other=0.0).to(tl.float32)
                squares += xk * xk
            scale = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / k_in + eps)
        acc = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
        for start in range(0, k_in, BLOCK_K):
            k = start + tl.arange(0, BLOCK_K)
            k_in_range = k < k_in
            wt = tl.load(w + n[:, None] * w_stride + k[None, :], mask=n_in[:, None] & k_in_range[None, :], other=0.0)
            xk = tl.load(x + k, mask=k_in_range, other=0.0).to(tl.float32)
            if NORM:  # as HF's RMSNorm rounds: the normalized row to x's dtype, times the norm's weight, rounded again
                g = tl.load(norm + k, mask=k_in_range, other=0.0).to(tl.float32)
                xk = ((xk * scale).to(dtype).to(tl.float32) * g).to(dtype).to(tl.float32)
            if ACT:  # a gated MLP's silu(gate) * up, rounded as eager rounds each: x is the gate
                u = tl.load(up + k, mask=k_in_range, other=0.0).to(tl.float32)
                xk = ((xk * tl.sigmoid(xk)).to(dtype).to(tl.float32) * u).to(dtype).to(tl.float32)
            acc += wt.to(tl.float32) * xk[None, :]
        total = tl.sum(acc, axis=1)
        if HAS_BIAS:
            total += tl.load(bias + n, mask=n_in, other=0.0).to(tl.float32)
        tl.store(y + n, total.to(y.dtype.element_ty), mask=n_in)
    else:
        m = tl.arange(0, 16)
        m_in = m < rows
        scales = tl.full([16], 1.0, tl.float32)
        if NORM:
            squares = tl.zeros([16, BLOCK_K], tl.float32)
            for start in range(0, k_in, BLOCK_K):
                k = start + tl.arange(0, BLOCK_K)
                xt = tl.load(x + m[:, None] * x_stride + k[None, :], mask=m_in[:, None] & (k < k_in)[None, :], other=0.0).to(tl.float32)
                squares += xt * xt
            scales = 1.0 / tl.sqrt(tl.sum(squares, axis=1) / k_in + eps)
        acc = tl.zeros([16, BLOCK_N], tl.float32)
        for start in range(0, k_in, BLOCK_K):
            k = start + tl.arange(0, BLOCK_K)
            k_in_range = k < k_in
            # [BLOCK_N, BLOCK_K]: loads along the contiguous K
            wt = tl.load(w + n[:, None] * w_stride + k[None, :], mask=n_in[:, None] & k_in_range[None, :], other=0.0)
            xt = tl.load(x + m[:, None] * x_stride + k[None, :], mask=m_in[:, None] & k_in_range[None, :], other=0.0)
            if NORM:
                g = tl.load(norm + k, mask=k_in_range, other=0.0).to(tl.float32)
                xt = ((xt.to(tl.float32) * scales[:, None]).to(dtype).to(tl.float32) * g[None, :]).to(dtype)
            if ACT:
                ut = tl.load(up + m[:, None] * up_stride + k[None, :], mask=m_in[:, None] & k_in_range[None, :], other=0.0).to(tl.float32)
                gate = xt.to(tl.float32)
                xt = ((gate * tl.sigmoid(gate)).to(dtype).to(tl.float32) * ut).to(dtype)
            if F32_DOT:
                acc += tl.dot(xt.to(tl.float32), tl.trans(wt.to(tl.float32)), input_precision="ieee")
            else:
                acc += tl.dot(xt, tl.trans(wt))
        if HAS_BIAS:
            acc += tl.load(bias + n, mask=n_in, other=0.0).to(tl.float32)[None, :]
        tl.store(y + m[:, None] * n_out + n[None, :], acc.to(y.dtype.element_ty), mask=m_in[:, None] & n_in[None, :])


def choice(n_out: int, k_in: int, device_name: str) -> dict | str | None:
    """What runs a one-row call of weight [n_out, k_in] on this device: launch params, "cublas" (a cold sweep on this
    device measured cuBLAS faster at the shape), or None (no measurement: the defaults). TUNED first, then SHIPPED."""
    if (n_out, k_in) in TUNED:
        return TUNED[(n_out, k_in)]
    return _table(SHIPPED).get(device_name, {}).get("shapes", {}).get(f"{n_out},{k_in}")


@functools.cache
def _table(path: Path) -> dict:
    """A tuned table as read once a process (empty where there is none)."""
    return json.loads(path.read_text()) if path.is_file() else {}


def launch_params(rows: int, n_out: int, params: dict | None = None) -> dict:
    """Tile and options of one launch: a tune winner's params (BLOCK_N, BLOCK_K, num_warps, num_stages), else, for one
    row of x, 2 rows of W a program and 1,024 of K an iteration, 4 stages: within 1.2 % of the best of 48
    configurations per shape summed over a 1.2B Llama's four decode projections, with cold weights on the H100 (the
    old 8 x 512 was 11 % slower there, near cuBLAS: lab/device-runs/gemv_sweep.py, results/h100/roof); for a few rows 16 rows
    of W by 512 of K, loaded along K (3.4 ms of the GEMV in a batch-8 token on the H100, the 32 x 64 tile loaded across K
    4.3 ms, cuBLAS's about 1 ms: decode_gemv sends a few rows to cuBLAS unless asked; results/h100/roof)."""
    chosen = {"BLOCK_N": 2, "BLOCK_K": 1024, "num_warps": 4, "num_stages": 4} if rows == 1 else {"BLOCK_N": 16, "BLOCK_K": 512,
                                                                                                 "num_warps": 4, "num_stages": 3}
    return {**chosen, **(params or {})}


def unsupported(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, norm: torch.Tensor | None = None,
                up: torch.Tensor | None = None) -> str:
    """Why this kernel does not take the layer's call (empty: it does)."""
    if weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        return f"x {tuple(x.shape)} and weight {tuple(weight.shape)}: give x [..., K] and weight [N, K]"
    rows = x.numel() // max(x.shape[-1], 1)
    if rows > MAX_ROWS or rows == 0:
        return f"{rows} rows: the kernel is for 1 to {MAX_ROWS} (a decode step's tokens); more is a GEMM"
    if not (x.dtype == weight.dtype) or x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"x is {x.dtype}, weight {weight.dtype}: one of float32, bfloat16, float16 for both"
    if bias is not None and (bias.shape != (weight.shape[0],) or bias.dtype != weight.dtype):
        return f"bias {tuple(bias.shape)} of {bias.dtype}: give [{weight.shape[0]}] of {weight.dtype}"
    if weight.stride(1) != 1:
        return "weight is strided along K: the kernel streams rows of W contiguous along K"
    if norm is not None and (norm.shape != (weight.shape[1],) or norm.dtype != weight.dtype or norm.stride(0) != 1):
        return f"norm weight {tuple(norm.shape)} of {norm.dtype}: give [{weight.shape[1]}] of {weight.dtype}, contiguous"
    if up is not None and (up.shape != x.shape or up.dtype != x.dtype or up.stride(-1) != 1):
        return f"up {tuple(up.shape)} of {up.dtype}: give the gate's shape {tuple(x.shape)} and dtype {x.dtype}, contiguous along K"
    if up is not None and norm is not None:
        return "a norm and an activation folded into one call: the kernel folds one of them"
    return ""


def gemv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, params: dict | None = None,
         norm: torch.Tensor | None = None, eps: float = 1e-6, up: torch.Tensor | None = None) -> torch.Tensor:
    """x W^T (+ bias) for a few rows of x: [..., K] -> [..., N]; with `norm` (an RMSNorm's weight, [K]) the rows are
    RMS-normalized first (eps inside the root) as HF's Llama RMSNorm computes and rounds them: the norm's own kernel
    folded into the GEMV; with `up` (a gated MLP's up projection, x's shape) the product is silu(x) * up, rounded as
    eager rounds each, times W^T: the activation's kernel folded into the down projection."""
    problem = unsupported(x, weight, bias, norm, up)
    if problem:
        raise ValueError(problem)
    n_out, k_in = weight.shape
    flat = x.reshape(-1, k_in)
    if flat.stride(1) != 1:
        flat = flat.contiguous()
    ups = flat if up is None else up.reshape(-1, k_in)
    rows = flat.shape[0]
    out = torch.empty(rows, n_out, dtype=x.dtype, device=x.device)
    chosen = launch_params(rows, n_out, params)
    gemv_kernel[(triton.cdiv(n_out, chosen["BLOCK_N"]),)](
        flat, ups, weight, weight if bias is None else bias, weight if norm is None else norm, out, rows, n_out, k_in, flat.stride(0),
        ups.stride(0), weight.stride(0), float(eps), HAS_BIAS=bias is not None, NORM=norm is not None, ACT=up is not None,
        ONE_ROW=rows == 1, F32_DOT=x.dtype == torch.float32 or INTERPRETED,
        BLOCK_N=chosen["BLOCK_N"], BLOCK_K=chosen["BLOCK_K"], num_warps=chosen["num_warps"], num_stages=chosen["num_stages"])
    return out.reshape(*x.shape[:-1], n_out)
