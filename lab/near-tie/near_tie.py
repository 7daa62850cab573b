"""The near-tie gate (tools/workload/gate/generated.py) on the decoder example, in one process on the GPU: for each point
(knob values), the eager reference's tokens and top-8 log-probabilities against the static cache's, the compiled
decode_loop's, and wrong models (one layer's MLP output too large by 50 %, 10 % and 1 %: the kinds of error a wrong
kernel makes): the verdict at the example's declared tolerance, where each parted from the reference, and the largest
log-probability gap seen before parting (the drift a tolerance has to cover). Prints one JSON line per row.

    python3 lab/near-tie/near_tie.py [--points JSON] [--layers 8] [--scales 1.5,1.1,1.01] [--atol NATS]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import torch

from hyperloom.tools.workload.worker.levers import decode_loop
from hyperloom.tools.workload.gate.generated import Generated, judge
from hyperloom.tools.workload.models import OutputTolerance

REPO = Path(__file__).resolve().parents[2]
POINTS = [{"top_logprobs": 8}, {"new_tokens": 64, "top_logprobs": 8}, {"batch": 8, "top_logprobs": 8},
          {"prompt_tokens": 1024, "top_logprobs": 8}]


def example():
    spec = importlib.util.spec_from_file_location("decoder", REPO / "examples" / "workloads" / "decoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generated(workload) -> Generated:
    out = {k: v.cpu().numpy() for k, v in workload.outputs().items()}
    return Generated(out["tokens"], out["tokens.top_ids"], out["tokens.top_logprobs"])


def drift(candidate: Generated, reference: Generated) -> float:
    """The largest |log-probability gap| over ids in both top-k lists, at steps before the row's first unequal token."""
    worst = 0.0
    for b in range(reference.tokens.shape[0]):
        for t in range(min(candidate.ids.shape[1], reference.ids.shape[1])):
            mine = dict(zip(candidate.ids[b, t].tolist(), candidate.logprobs[b, t].tolist(), strict=True))
            for i, v in zip(reference.ids[b, t].tolist(), reference.logprobs[b, t].tolist(), strict=True):
                if i in mine:
                    worst = max(worst, abs(mine[i] - v))
            if candidate.tokens[b, candidate.prompt + t] != reference.tokens[b, reference.prompt + t]:
                break
    return worst


def run(workload, steps: int = 2) -> Generated:
    for _ in range(steps):  # the second: after a compile
        workload.step()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return generated(workload)


def main(args: argparse.Namespace) -> None:
    decoder = example()
    for point in json.loads(args.points) if args.points else POINTS:
        knobs = {"layers": args.layers, **point}
        workload = decoder.build(**knobs)
        tolerance = OutputTolerance(**({"atol": args.atol} if args.atol is not None else workload.tolerances["tokens.top_logprobs"]))
        reference = run(workload, 1)
        rows = {}
        workload.cache = "static"
        rows["static"] = run(workload)
        layer = workload.model.model.layers[0].mlp.down_proj
        for scale in map(float, args.scales.split(",")):
            with torch.no_grad():
                original = layer.weight.clone()
                layer.weight.mul_(scale)
            rows[f"static, layer 0 MLP x{scale}"] = run(workload)
            with torch.no_grad():
                layer.weight.copy_(original)
        decode_loop.install(workload.model, compiled=True)
        rows["static + decode_loop"] = run(workload, 3)
        for name, candidate in rows.items():
            passed, detail = judge(candidate, reference, tolerance)
            equal = float(np.mean(candidate.tokens == reference.tokens)) if candidate.tokens.shape == reference.tokens.shape else None
            print(json.dumps({"point": point, "candidate": name, "gate": "PASS" if passed else "FAIL",
                              "exact_tokens": "PASS" if equal == 1.0 else "FAIL", "tokens_equal_share": equal,
                              "drift_before_parting_nats": round(drift(candidate, reference), 5), "atol": tolerance.atol,
                              "detail": detail[:400]}), flush=True)
        print(json.dumps({"point": point, "decode_loop_counts": decode_loop.COUNTS.snapshot()}), flush=True)
        del workload
        torch.cuda.empty_cache()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", default=None, help="JSON list of knob dicts")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--atol", type=float, default=None, help="the log-probabilities' tolerance (default: what the example declares)")
    parser.add_argument("--scales", default="1.5,1.1,1.01", help="the wrong models: layer 0's MLP down projection times each")
    main(parser.parse_args())
    sys.exit(0)
