"""Row softmax in Triton, written for Hyperloom's example: one program per row, the row read in chunks of
BLOCK columns twice (a running max and sum, then the normalized values), so BLOCK is a free tuning choice.
The kernel's own @triton.autotune list is the spec's search space (tuning: autotune_config)."""

import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": block}, num_warps=warps) for block in (256, 1024, 4096) for warps in (4, 8)],
    key=["n_cols"],
)
@triton.jit
def softmax_kernel(x, y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * n_cols
    y_row = y + row * n_cols
    columns = tl.arange(0, BLOCK)
    running_max = tl.full([BLOCK], -float("inf"), tl.float32)
    running_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):  # per lane: max and sum of exp, rescaled when the max grows
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, chunk)
        scale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
        running_sum = running_sum * scale + tl.where(mask, tl.exp(chunk - new_max), 0.0)
        running_max = new_max
    row_max = tl.max(running_max, 0)
    lane_scale = tl.where(running_max == -float("inf"), 0.0, tl.exp(running_max - row_max))
    row_sum = tl.sum(running_sum * lane_scale, 0)
    for start in range(0, n_cols, BLOCK):
        mask = start + columns < n_cols
        chunk = tl.load(x_row + start + columns, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + columns, tl.exp(chunk - row_max) / row_sum, mask=mask)
