"""The fusion library (kernels/triton/) on a GPU: each launcher against the eager torch code it replaces, in bfloat16,
float16 and float32 at the H200 Llama fixture's shapes: the share of bit-identical outputs, the largest difference,
and the time of both (triton.testing.do_bench: CUDA events, L2 flushed between repetitions; MEASURED on this device).

    python lab/device-runs/fusion_library.py OUT [--reps-ms 200]

Writes OUT/fusion_library.json and OUT/fusion_library.log. Needs torch with a GPU, triton and hyperloom (the
launchers launch through hyperloom.core.triton_launch); no network. On the CPU, the interpreter rounds float32 to
bfloat16 by truncation, so bit-identity in bfloat16 is something only this run shows (tests/test_fusion_library.py holds bfloat16 to two
ulps there). Without a GPU it runs
as a dry run in Triton's interpreter, untimed: `python lab/device-runs/fusion_library.py /tmp/out --tokens 4`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

from hyperloom.tools.triton.entry import load_module  # imports no triton: the interpreter choice below still holds

LIBRARY = Path(__file__).resolve().parents[2] / "kernels" / "triton"
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"  # read when triton is first imported (below, in main) and at each launch


def hf_rmsnorm(x, weight, eps=1e-6):  # type: ignore[no-untyped-def]
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + eps)
    return weight * hidden.to(x.dtype)


def rotate_half(x):  # type: ignore[no-untyped-def]
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


def cases(dtype: torch.dtype, tokens: int):  # type: ignore[no-untyped-def]
    """(name, ours, eager) at the fixture's prefill shapes: 512 tokens, hidden 2048, intermediate 8192, 32 q heads of 64."""
    g = torch.Generator(device=DEVICE).manual_seed(0)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, device=DEVICE).to(dtype)

    rms, add, ln, silu, gelu, rope = (load_module(str(LIBRARY / n / f"{n}.py"))
                                      for n in ("rmsnorm", "add_rmsnorm", "layernorm", "silu_and_mul", "gelu_and_mul", "rotary"))
    x, residual, weight, bias = draw(1, tokens, 2048), draw(1, tokens, 2048), draw(2048).abs() + 0.5, draw(2048)
    gate, up = draw(1, tokens, 8192), draw(1, tokens, 8192)
    q, cos, sin = draw(1, tokens, 32, 64).transpose(1, 2), draw(1, tokens, 64), draw(1, tokens, 64)
    yield "rmsnorm", lambda: rms.rmsnorm(x, weight), lambda: hf_rmsnorm(x, weight)
    yield ("add_rmsnorm", lambda: add.add_rmsnorm(x, residual.clone(), weight),  # a copy per call (updated in place): timed too
           lambda: (lambda total: (hf_rmsnorm(total, weight), total))(residual + x))
    yield "layernorm", lambda: ln.layernorm(x, weight, bias), lambda: torch.nn.functional.layer_norm(x, (2048,), weight, bias)
    yield "silu_mul", lambda: silu.silu_mul(gate, up), lambda: torch.nn.functional.silu(gate) * up
    yield "gelu_mul", lambda: gelu.gelu_mul(gate, up), lambda: torch.nn.functional.gelu(gate) * up
    yield "rotary", lambda: rope.rotary(q, cos, sin), lambda: q * cos.unsqueeze(1) + rotate_half(q) * sin.unsqueeze(1)


def compare(ours, eager) -> dict:  # type: ignore[no-untyped-def]
    ours, eager = (o if isinstance(o, tuple) else (o,) for o in (ours, eager))
    rows = []
    for a, b in zip(ours, eager, strict=True):
        rows.append({"identical_fraction": (a == b).float().mean().item(), "max_abs_diff": (a.float() - b.float()).abs().max().item()})
    return {"outputs": rows}


def main() -> int:
    import triton
    import triton.testing

    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--reps-ms", type=float, default=200.0)
    parser.add_argument("--tokens", type=int, default=512)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "fusion_library.log").open("w")
    timed = DEVICE == "cuda"
    report = {"device": torch.cuda.get_device_name() if timed else "CPU (Triton's interpreter: a dry run, untimed)",
              "torch": torch.__version__, "triton": triton.__version__, "tag": "MEASURED", "tokens": args.tokens, "cases": []}
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for name, ours, eager in cases(dtype, args.tokens):
            row = {"kernel": name, "dtype": str(dtype).removeprefix("torch."), **compare(ours(), eager())}
            row["ours_us"] = 1e3 * triton.testing.do_bench(ours, rep=args.reps_ms) if timed else None
            row["eager_us"] = 1e3 * triton.testing.do_bench(eager, rep=args.reps_ms) if timed else None
            report["cases"].append(row)
            times = f"ours {row['ours_us']:.2f} us, eager {row['eager_us']:.2f} us" if timed else "untimed"
            line = (f"{name:12s} {row['dtype']:9s} identical {[round(o['identical_fraction'], 5) for o in row['outputs']]} max diff "
                    f"{[o['max_abs_diff'] for o in row['outputs']]}  {times}")
            print(line, flush=True)
            log.write(line + "\n")
    (args.out / "fusion_library.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
