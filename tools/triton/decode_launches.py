"""Worker side: the launches the decode levers' library kernels make at a decoder's shapes, recorded on meta tensors
(recorded.py), for building them where no device of the target is (an AMD target on any machine).

decode_gemv launches kernels/triton/gemv for every projection of a decode step at one row (plain; with an RMSNorm
folded; with a gated MLP's activation folded into the down projection) and at a few rows (its tensor-core tile);
decode_attention launches kernels/triton/decode_attention over a static cache (a bool mask and an additive one; one
program a KV head, and split over the cache with its combine kernel). Distinct builds only: launches that take the
same kernel, argument dtypes and binding are one build.
"""

from __future__ import annotations

import os
from typing import Any

from hyperloom.core.hashing import sha256_json

SPLIT_SLOTS = 64
"""A split of the cache forced for the recording: the split variant and its combine kernel are built at any device size."""


def decode_launches(payload: dict[str, Any]) -> dict[str, Any]:
    """{"launches": [{"lever", "label", **launch}]} for the decoder shape in `payload` (DecoderShape's fields)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return {"error": {"kind": "environment",
                          "message": "TRITON_INTERPRET=1: the kernels would be interpreted, with no launch to record"}}
    import torch

    from hyperloom.core.shipped import shipped_kernels
    from hyperloom.tools.triton.entry import load_module
    from hyperloom.tools.triton.recorded import recorded

    shape = payload["shape"]
    dtype = getattr(torch, shape["dtype"])
    gemv = load_module(str(shipped_kernels("triton", "gemv", "gemv.py")))
    attention = load_module(str(shipped_kernels("triton", "decode_attention", "decode_attention.py")))

    def empty(*size: int, kind: Any = dtype) -> Any:
        return torch.empty(*size, dtype=kind, device="meta")

    hidden, inter, heads, kv_heads, dim = shape["hidden"], shape["intermediate"], shape["heads"], shape["kv_heads"], shape["head_dim"]
    qkv, slots = (heads + 2 * kv_heads) * dim, shape["slots"]
    calls: list[tuple[str, str, Any]] = [
        ("decode_gemv", f"one row, qkv {qkv}x{hidden}", lambda: gemv.gemv(empty(1, hidden), empty(qkv, hidden))),
        ("decode_gemv", f"one row, o {hidden}x{heads * dim}", lambda: gemv.gemv(empty(1, heads * dim), empty(hidden, heads * dim))),
        ("decode_gemv", f"one row, gate_up {2 * inter}x{hidden}", lambda: gemv.gemv(empty(1, hidden), empty(2 * inter, hidden))),
        ("decode_gemv", f"one row, RMSNorm folded, qkv {qkv}x{hidden}",
         lambda: gemv.gemv(empty(1, hidden), empty(qkv, hidden), norm=empty(hidden))),
        ("decode_gemv", f"one row, activation folded, down {hidden}x{inter}",
         lambda: gemv.gemv(empty(1, inter), empty(hidden, inter), up=empty(1, inter))),
        ("decode_gemv", f"4 rows, qkv {qkv}x{hidden}", lambda: gemv.gemv(empty(4, hidden), empty(qkv, hidden))),
    ]
    q, cache = empty(1, heads, 1, dim), empty(1, kv_heads, slots, dim)
    for mask, said in ((empty(1, 1, 1, slots, kind=torch.bool), "bool mask"), (empty(1, 1, 1, slots), "additive mask")):
        for params, split in ((None, ""), ({"SPLIT_SLOTS": SPLIT_SLOTS}, f" split by {SPLIT_SLOTS}")):
            calls.append(("decode_attention", f"{said}, {slots} slots{split}",
                          lambda m=mask, p=params: attention.decode_attention(q, cache, cache, m, dim ** -0.5, params=p)))
    launches, keys = [], set()
    for lever, label, call in calls:
        for one in recorded(call):
            key = sha256_json({k: one[k] for k in ("entry", "constexprs", "options")} | {"dtypes": [a["dtype"] for a in one["args"]]})
            if key not in keys:
                keys.add(key)
                launches.append({"lever": lever, "label": label, **one})
    return {"launches": launches}
