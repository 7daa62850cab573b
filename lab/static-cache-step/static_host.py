"""The host side of the static KV cache's step (issue 32): the decoder of examples/workloads/decoder.py under
`cache=static`, warmed up, then `--steps` steps under whatever samples this process (py-spy, from the shell), and an
in-process A/B of torch.compiler.set_stance(skip_guard_eval_unsafe=True) against the default stance, the legs
alternating (ABAB...), tokens compared. Synchronized wall time per step; figures are MEASURED where they ran.

    py-spy record -f raw -o OUT/spy.txt -- python3 lab/static-cache-step/static_host.py OUT [--steps 40] [--pairs 10]

Writes OUT/static_host.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from static_decode import build, timed_s  # beside this file: the decoder, and synchronized steps timed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    workload = build(cache="static", layers=args.layers)
    for _ in range(3):
        workload.step()
    reference = workload.tokens.clone()
    sampled_ms = [t * 1e3 for t in timed_s(workload.step, args.steps)]
    legs: dict[str, list[float]] = {"default": [], "skip_guard_eval_unsafe": []}
    same = True
    for _ in range(args.pairs):
        legs["default"].append(timed_s(workload.step, 1)[0] * 1e3)
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
            legs["skip_guard_eval_unsafe"].append(timed_s(workload.step, 1)[0] * 1e3)
            same &= bool(torch.equal(workload.tokens, reference))
    median = {name: statistics.median(times) for name, times in legs.items()}
    result = {"measured": "MEASURED", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "sampled_steps_ms": [round(t, 3) for t in sampled_ms], "sampled_median_ms": round(statistics.median(sampled_ms), 3),
              "legs_ms": {k: [round(t, 3) for t in v] for k, v in legs.items()}, "median_ms": {k: round(v, 3) for k, v in median.items()},
              "speedup": round(median["default"] / median["skip_guard_eval_unsafe"], 4),
              "pairs_faster": sum(b < a for a, b in zip(legs["default"], legs["skip_guard_eval_unsafe"])), "tokens_equal": same}
    print(json.dumps(result), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "static_host.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
