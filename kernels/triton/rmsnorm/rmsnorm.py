"""RMSNorm in Triton, as HF's Qwen2RMSNorm and LlamaRMSNorm compute it: one program per row, the row's mean square
in float32 (sum * (1 / n), as torch's mean), then weight * (x * rsqrt(mean + eps)) rounded to x's dtype first, as
`weight * hidden.to(input_dtype)` does. The sum of squares runs over BLOCK-column chunks, or (LANES > 0) in the order
torch's CUDA reduce kernel adds it, so that a bf16 model gets the very bits its eager module gives: a greedy decode
of a model with near-tied logits turns one flipped bf16 rounding into another token.

`rmsnorm(x, weight, eps)` launches it on torch tensors of any leading shape (float32, bfloat16, float16), in eager
torch's order where eager_reduce_lanes models it, through its compiled kernel's own launcher (no Triton binder a call).
The kernel's own @triton.autotune list is the spec's search space (tuning: autotune_config)."""

import functools

import torch
import triton
import triton.language as tl

from hyperloom.core.triton_launch import PreboundKernel

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8, 16)]
@triton.jit
def _fold_halves(values, WIDTH: tl.constexpr):
    """values[i] + values[i + WIDTH // 2] for i < WIDTH // 2: one step of torch's tree (shared memory, then shuffles
    down by 16, 8, 4, 2, 1), one add each."""
    return tl.sum(tl.reshape(values, [2, WIDTH // 2]), axis=0)


@triton.jit
def eager_order_sum_of_squares(x_row, n_cols, LANES: tl.constexpr, STEPS: tl.constexpr):
    """The row's sum of squares in float32, added in the order torch's CUDA reduce kernel adds x.pow(2).mean(-1) when
    it reads the row as float4 vectors with LANES threads (eager_reduce_lanes): thread t keeps four sums (one per
    vector element) over vectors t, t + LANES, ...; joins them ((s0 + s1) + s2) + s3; then thread t adds thread
    t + LANES / 2's sum, by halves down to one. Same order, same float32 rounding: the same bits as eager (checked on
    the H200 with torch 2.11, tests/fixtures/torch_reduce/h200_torch_mean_order.npz)."""
    lanes = tl.arange(0, LANES)
    s0 = tl.zeros([LANES], tl.float32)
    s1 = tl.zeros([LANES], tl.float32)
    s2 = tl.zeros([LANES], tl.float32)
    s3 = tl.zeros([LANES], tl.float32)
    for step in tl.static_range(STEPS):
        first = (lanes + step * LANES) * 4
        live = first < n_cols
        v = tl.load(x_row + first, mask=live, other=0.0).to(tl.float32)
        s0 += v * v
        v = tl.load(x_row + first + 1, mask=live, other=0.0).to(tl.float32)
        s1 += v * v
        v = tl.load(x_row + first + 2, mask=live, other=0.0).to(tl.float32)
        s2 += v * v
        v = tl.load(x_row + first + 3, mask=live, other=0.0).to(tl.float32)
        s3 += v * v
    total = ((s0 + s1) + s2) + s3
    if LANES >= 512:
        total = _fold_halves(total, 512)
    if LANES >= 256:
        total = _fold_halves(total, 256)
    if LANES >= 128:
        total = _fold_halves(total, 128)
    if LANES >= 64:
        total = _fold_halves(total, 64)
    total = _fold_halves(total, 32)
    total = _fold_halves(total, 16)
    total = _fold_halves(total, 8)
    total = _fold_halves(total, 4)
    total = _fold_halves(total, 2)
    return tl.sum(total, axis=0)


@triton.jit
def _mean_square(x_row, n_cols, BLOCK: tl.constexpr, LANES: tl.constexpr, STEPS: tl.constexpr):
    """The row's mean square in float32, as torch's mean takes it: sum * (1 / n), the sum in eager torch's order
    (LANES > 0) or over BLOCK-column chunks."""
    if LANES > 0:
        total = eager_order_sum_of_squares(x_row, n_cols, LANES, STEPS)
    else:
        columns = tl.arange(0, BLOCK)
        squares = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + columns < n_cols
            chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
            squares += chunk * chunk
        total = tl.sum(squares, 0)
    return total * tl.math.div_rn(tl.full([], 1.0, tl.float32), n_cols.to(tl.float32))


@triton.jit
def mean_square_kernel(x, out, n_cols, BLOCK: tl.constexpr, LANES: tl.constexpr = 0, STEPS: tl.constexpr = 0):
    """out[row] = the mean square rmsnorm_kernel normalizes row `row` of x by: what tests and
    lab/rmsnorm-eager-bits/eager_bits.py compare with torch's x.float().pow(2).mean(-1), bit for bit."""
    row = tl.program_id(0).to(tl.int64)
    tl.store(out + row, _mean_square(x + row * n_cols, n_cols, BLOCK, LANES, STEPS))


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def rmsnorm_kernel(x, weight, y, n_cols, eps, BLOCK: tl.constexpr, LANES: tl.constexpr = 0, STEPS: tl.constexpr = 0):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * n_cols
    y_row = y + row * n_cols
    columns = tl.arange(0, BLOCK)
    rstd = tl.math.rsqrt(_mean_square(x_row, n_cols, BLOCK, LANES, STEPS) + eps)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        scale = tl.load(weight + start + columns, mask=mask, other=0.0).to(tl.float32)
        normed = (chunk * rstd).to(x.dtype.element_ty).to(tl.float32)  # HF rounds to the input dtype before the weight
        tl.store(y_row + start + columns, (normed * scale).to(y.dtype.element_ty), mask=mask)


def _last_pow2(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def eager_reduce_lanes(rows: int, n_cols: int) -> int:
    """Threads torch's CUDA reduce kernel gives each row of x.pow(2).mean(-1) on `rows` contiguous float32 rows (its
    ReduceConfig: float4 input vectors, block width from the vector count and block height from the rows, 512 threads at
    most), or 0 where its order is not modelled here: rows not of whole float4 vectors, 128 columns or fewer (no
    vectorized reads), or so many vectors a thread that torch splits the row over warps too."""
    if n_cols % 4 or n_cols <= 128:
        return 0
    vectors, most = n_cols // 4, 512
    wide = _last_pow2(vectors) if vectors < most else most
    tall = _last_pow2(rows) if rows < most else most
    height = min(tall, most // min(wide, 32))
    width = min(wide, most // height)
    per_thread = -(-vectors // width)
    if width < 32 or per_thread >= min(height * 16, 256):
        return 0
    return width


@functools.lru_cache(maxsize=256)
def _cached_params(n_cols: int, rows: int, params: tuple) -> dict:
    """launch_params once per (width, rows, params): a decode step calls the launcher hundreds of times alike."""
    return launch_params(n_cols, dict(params), rows)


def launch_params(n_cols: int, params: dict | None = None, rows: int = 0) -> dict:
    """Constexprs and options of one launch: a tune winner's params ({"autotune_config": i} or BLOCK/num_warps), else a
    block of the whole row (up to 8192 columns). Given `rows`, the sum of squares runs in eager torch's order where
    that is modelled (LANES, STEPS; launched without fused multiply-adds, as torch's separate pow and mean round)."""
    params = dict(params or {})
    if "autotune_config" in params:
        config = CONFIGS[int(params.pop("autotune_config"))]
        params = {**config.kwargs, "num_warps": config.num_warps, **params}
    block = min(triton.next_power_of_2(n_cols), 8192)
    lanes = eager_reduce_lanes(rows, n_cols) if rows else 0
    order = {"LANES": lanes, "STEPS": -(-n_cols // (4 * lanes)), "enable_fp_fusion": False} if lanes else {}
    return {"BLOCK": block, "num_warps": 4 if block <= 1024 else 8 if block <= 4096 else 16, **order, **params}


_LAUNCH = PreboundKernel(rmsnorm_kernel.fn)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, params: dict | None = None) -> torch.Tensor:
    """weight * rmsnorm(x) over the last dimension; the result in x's dtype promoted with weight's, as HF's module
    returns; the sum of squares in eager torch's order where it is modelled, so the bits are eager's."""
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,):
        raise ValueError(f"weight has shape {tuple(weight.shape)}, the rows of x have {n_cols} columns: give a weight of shape ({n_cols},)")
    rows = x.reshape(-1, n_cols).contiguous()
    y = torch.empty(rows.shape, dtype=torch.promote_types(x.dtype, weight.dtype), device=x.device)
    if rows.shape[0]:
        meta = _cached_params(n_cols, rows.shape[0], tuple(sorted(params.items())) if params else ())
        _LAUNCH((rows.shape[0],), (rows, weight.contiguous(), y, n_cols, eps), meta)
    return y.reshape(x.shape)
