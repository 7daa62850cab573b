"""Issue 30's GPU figures, through the MCP tools over stdio (as an agent calls them): a transformers Qwen2-shaped
decoder with random weights (examples/workloads/decoder.py, bf16) frozen, then timed end to end beside levers
(the static KV cache knob, torch.compile, both, a CUDA graph of generate, the math attention backend), each
gated on the frozen tokens, checked for engagement and A/B-timed. Writes $OUT/workload/ (the tool's result.json,
report.md, speedup.png, the freeze result, the call log).

    python3 lab/device-runs/workload_h200.py [--layers 8] [--candidates JSON] [--integrate]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_calls import copy_named, logged_tool  # noqa: E402 - the device scripts' logged MCP client

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = [["knob:cache=static"], ["compile"], ["knob:cache=static", "compile"], ["graph"], ["sdpa_math"]]


async def main(args: argparse.Namespace) -> None:
    out = Path(os.environ.get("OUT", "/tmp/device-out")) / "workload"
    ws = out / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "examples" / "workloads" / "decoder.py", ws / "decoder.py")
    async with logged_tool(ws, "workload", out / "calls.json", read_timeout_s=1800.0, text_chars=2000) as call:
        knobs = {"layers": str(args.layers), **json.loads(args.knobs)}
        frozen = await call({"action": "freeze", "workload": "decoder.py:build", "name": "qwen2", "knobs": knobs, "token_match": 1.0})
        (out / "freeze.json").write_text(json.dumps(frozen, indent=2))
        if args.integrate:
            integrated = await call({"action": "integrate", "name": "qwen2", "kernel": "rmsnorm", "pairs": args.pairs,
                                     "steps_per_leg": args.steps_per_leg,
                                     "replace": "transformers.models.qwen2.modeling_qwen2:Qwen2RMSNorm.forward"})
            (out / "integrate.json").write_text(json.dumps(integrated, indent=2))
            print(f"  {integrated.get('verdict')}: calls a step {integrated.get('calls_per_step')}, wrapper "
                  f"{integrated.get('wrapper_us_per_call')} us a call")
        bench = {} if args.integrate else await call({"action": "bench", "name": "qwen2",
                                                      "candidates": json.loads(args.candidates) if args.candidates else CANDIDATES,
                            "pairs": args.pairs, "steps_per_leg": args.steps_per_leg, "warmup_steps": 2, "max_baseline_legs": 12})
        for c in bench.get("candidates", []):
            print(f"  {' + '.join(c['levers'])}: {c['verdict']} {c.get('speedup') or ''} {c['reason'][:200]}")
    copy_named(ws / ".hyperloom" / "workload" / "qwen2" / "bench", out, ("result.json", "report.md", "speedup.png"))
    shutil.rmtree(ws / ".hyperloom" / "workload" / "qwen2" / "runs", ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--steps-per-leg", type=int, default=2)
    parser.add_argument("--candidates", default=None)
    parser.add_argument("--knobs", default="{}", help="more knobs for the freeze, JSON (e.g. {\"new_tokens\": \"64\"})")
    parser.add_argument("--integrate", action="store_true",
                        help="instead of the levers: the fusion library's rmsnorm in place of Qwen2RMSNorm.forward")
    anyio.run(main, parser.parse_args())
