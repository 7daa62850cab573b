"""The decode_attention kernel against SDPA on the GPU, at a decode step's shapes (the 1.2B decoder's: 32 query heads,
8 KV heads, dim 64, bf16), per cache length and fill: its error and SDPA's against a float32 computation of the same
attention, and each one's time a call (CUDA events over a captured graph of 100 calls, as a replayed decode step
runs it), SDPA as transformers calls it with a mask (the K/V repeated for the query heads first); and the kernel's
variants: blocks of 16 and 32 slots (more splits). (Session 27 also timed the splits combined by the last to arrive,
on an atomic counter, instead of the combine kernel: no faster at 192 slots on the H100, 2x slower at 4,096; removed.)

    python3 lab/decode-attention-vs-sdpa/decode_attention_check.py OUT        # writes OUT/decode_attention_check.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device-runs"))
from graph_time import graph_us  # noqa: E402 - lab/device-runs/graph_time.py, shared with gemv_sweep.py
from hyperloom.tools.workload.worker.levers.kernel_route import launcher

kernel = launcher(torch, "decode_attention")


VARIANTS = {"16 slots a block": {"BLOCK_N": 16}, "32 slots a block": {"BLOCK_N": 32}}


def reference(q, k, v, mask, scale):  # noqa: ANN001, ANN201
    group = q.shape[1] // k.shape[1]
    keys, values = k.repeat_interleave(group, 1).float(), v.repeat_interleave(group, 1).float()
    scores = (q.float() @ keys.transpose(-1, -2)) * scale
    return (scores.masked_fill(~mask, float("-inf")).softmax(-1) @ values).transpose(1, 2)


def sdpa(q, k, v, mask, scale):  # noqa: ANN001, ANN201
    group = q.shape[1] // k.shape[1]
    keys = k[:, :, None].expand(-1, -1, group, -1, -1).reshape(k.shape[0], -1, k.shape[2], k.shape[3])
    values = v[:, :, None].expand(-1, -1, group, -1, -1).reshape(v.shape[0], -1, v.shape[2], v.shape[3])
    return torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale).transpose(1, 2).contiguous()


def main(out: Path) -> None:
    torch.manual_seed(0)
    rows = []
    for batch, slots, filled in ((1, 192, 160), (1, 192, 129), (8, 192, 160), (32, 192, 160), (1, 4096, 1000), (1, 4096, 4000),
                                 (8, 4096, 2048)):
        q = torch.randn(batch, 32, 1, 64, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(batch, 8, slots, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        mask = (torch.arange(slots, device="cuda") < filled).view(1, 1, 1, slots).expand(batch, 1, 1, slots).contiguous()
        scale = 64 ** -0.5
        exact = reference(q, k, v, mask, scale)
        mine, theirs = kernel.decode_attention(q, k, v, mask, scale), sdpa(q, k, v, mask, scale)
        error = {name: float((got.float() - exact).norm() / exact.norm()) for name, got in (("kernel", mine), ("sdpa", theirs))}
        timed = {"kernel_us": graph_us(lambda: kernel.decode_attention(q, k, v, mask, scale)),
                 "sdpa_us": graph_us(lambda: sdpa(q, k, v, mask, scale))}
        variants = {}
        for label, params in VARIANTS.items():  # blocks of fewer slots (more splits)
            got = kernel.decode_attention(q, k, v, mask, scale, params)
            variants[label] = {"us": graph_us(lambda: kernel.decode_attention(q, k, v, mask, scale, params)),  # noqa: B023
                               "rel_l2_vs_float32": float((got.float() - exact).norm() / exact.norm())}
        row = {"batch": batch, "slots": slots, "filled": filled, "rel_l2_vs_float32": error, **timed, "variants": variants}
        rows.append(row)
        print(f"batch {batch:>2} slots {slots:>5} filled {filled:>5}: kernel {timed['kernel_us']:6.1f} us (rel L2 {error['kernel']:.2e}), "
              f"sdpa with repeated K/V {timed['sdpa_us']:6.1f} us (rel L2 {error['sdpa']:.2e}); "
              + ", ".join(f"{label} {v['us']:.1f} us ({v['rel_l2_vs_float32']:.1e})" for label, v in variants.items()), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode_attention_check.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                                 "rows": rows}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
