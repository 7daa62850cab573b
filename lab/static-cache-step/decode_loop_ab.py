"""The decode_loop lever beside transformers' own static-cache generate, in one process on one GPU (issue 32): the
decoder of examples/workloads/decoder.py (cache=static), its tokens from both compared exactly, then alternating
synchronized steps (transformers', the loop's, ...) timed as pairs, and one profiled step of each (device time, graph
launches, kernels outside graphs), and where each of the two parts from the eager dynamic-cache baseline's tokens
(the campaign's reference). An in-process check that the loop runs and what it saves; the campaign's
interleaved A/B beside an A/A is the evidence.

    python3 lab/static-cache-step/decode_loop_ab.py OUT [--layers 8] [--pairs 10] [--knobs '{"batch": "8"}']

Writes OUT/decode_loop_ab.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from static_decode import build, profiled, timed_s  # noqa: E402 - the decoder and the timing of static_decode.py

from hyperloom.tools.workload.worker.levers import decode_loop  # noqa: E402


def main(args: argparse.Namespace) -> None:
    knobs = {"layers": args.layers, "cache": "static", **{k: int(v) if v.isdigit() else v for k, v in json.loads(args.knobs).items()}}
    decoder = build(**knobs)
    transformers_generate = decoder.model.generate
    decode_loop.install(decoder.model, compiled=torch.cuda.is_available())
    loop_generate = decoder.model.generate

    def step_with(generate):
        def step() -> torch.Tensor:
            decoder.model.generate = generate
            decoder.step()
            return decoder.tokens
        return step

    theirs, ours = step_with(transformers_generate), step_with(loop_generate)
    warm_s = {"transformers": timed_s(theirs, 3), "loop": timed_s(ours, 3)}  # compiles here
    static_tokens, loop_tokens = theirs().clone(), ours().clone()
    tokens_equal = bool(torch.equal(static_tokens, loop_tokens))
    decoder.cache = "dynamic"  # the eager baseline's tokens, which the campaign gates against
    eager_tokens = step_with(transformers_generate)().clone()
    decoder.cache = "static"
    prompt = decoder.prompt.shape[1]
    first_unequal = {"static_vs_eager": first_difference(static_tokens, eager_tokens, prompt),
                     "loop_vs_eager": first_difference(loop_tokens, eager_tokens, prompt),
                     "loop_vs_static": first_difference(loop_tokens, static_tokens, prompt)}
    pairs = [(timed_s(theirs, 1)[0], timed_s(ours, 1)[0]) for _ in range(args.pairs)]
    theirs_s, ours_s = [p[0] for p in pairs], [p[1] for p in pairs]
    eos = eos_check(decoder, transformers_generate, loop_generate, static_tokens) if args.eos else None
    result = {"knobs": knobs, "tokens_equal": tokens_equal, "eos": eos, "first_unequal_new_token": first_unequal, "warmup_s": warm_s,
              "pairs": len(pairs), "transformers_median_ms": round(statistics.median(theirs_s) * 1e3, 3),
              "loop_median_ms": round(statistics.median(ours_s) * 1e3, 3),
              "speedup_median_of_ratios": round(statistics.median(t / o for t, o in pairs), 4),
              "loop_faster_pairs": sum(o < t for t, o in pairs), "counts": decode_loop.COUNTS.snapshot(),
              "profiled": {"transformers": profiled(theirs), "loop": profiled(ours)},
              "measured_on": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu", "torch": torch.__version__}
    print(json.dumps(result, indent=1))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode_loop_ab.json").write_text(json.dumps(result, indent=1) + "\n")


def eos_check(decoder, theirs, ours, free: torch.Tensor) -> list[dict[str, object]]:
    """generate's EOS rules through both: EOS ids the free run makes mid-way, with and without min_new_tokens; each
    output's length and whether the two are equal."""
    prompt = decoder.prompt.shape[1]
    mid = sorted({int(free[row, prompt + 2 + row]) for row in range(free.shape[0])})
    checks = []
    for minimum in (0, 4):
        options = {"attention_mask": torch.ones_like(decoder.prompt), "max_new_tokens": decoder.new_tokens, "min_new_tokens": minimum,
                   "do_sample": False, "pad_token_id": 0, "cache_implementation": "static", "eos_token_id": mid}
        with torch.inference_mode():
            a, b = theirs(decoder.prompt, **options).clone(), ours(decoder.prompt, **options).clone()
        checks.append({"eos_token_id": mid, "min_new_tokens": minimum, "length_transformers": a.shape[1], "length_loop": b.shape[1],
                       "equal": a.shape == b.shape and bool(torch.equal(a, b))})
    return checks


def first_difference(a: torch.Tensor, b: torch.Tensor, prompt: int) -> list[dict[str, int]] | None:
    """Per row that differs, the first generated token (0 = the first after the prompt) where a and b part; None if equal."""
    rows = []
    for row in range(a.shape[0]):
        unequal = (a[row, prompt:] != b[row, prompt:]).nonzero()
        if unequal.numel():
            rows.append({"row": row, "new_token": int(unequal[0, 0])})
    return rows or None


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--eos", action="store_true", help="also check generate's EOS rules through both (eos_check)")
    parser.add_argument("--knobs", default="{}", help="JSON: other knob values of the decoder (batch, prompt_tokens, new_tokens)")
    main(parser.parse_args())
