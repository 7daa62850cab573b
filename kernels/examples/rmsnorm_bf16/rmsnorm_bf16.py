"""RMSNorm of bfloat16 rows in Triton, one program per row: the same arguments as rmsnorm_bf16.cu (x, w and y are
tl.bfloat16 pointers, the spec's bfloat16), sums in float32, the row streamed in BLOCK-column chunks."""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_bf16(x, w, y, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * cols
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        v = tl.load(x + row + offsets, mask=offsets < cols, other=0.0).to(tl.float32)
        total += v * v
    scale = 1.0 / tl.sqrt(tl.sum(total, 0) / cols + eps)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < cols
        v = tl.load(x + row + offsets, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(w + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(y + row + offsets, (v * scale * g).to(tl.bfloat16), mask=mask)
