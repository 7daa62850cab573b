"""Issue 32's GPU figures, through the MCP tools over stdio (as an agent calls them): one optimize campaign on a
transformers Qwen2-shaped decoder with random weights (examples/workloads/decoder.py, bf16): frozen (exact tokens),
the baseline timed, every lever that applies on this GPU alone (the cache knob's static value, the dtype knob's other
values, tf32, cuDNN benchmark, TunableOp, each attention backend, a CUDA graph, each torch.compile mode), the winners
stacked, the stack re-timed against the baseline after each keep, then closed. Proposals (--propose, a JSON list of
lever lists, e.g. kernel overrides once integrate lands) are queued right after the start; the campaign waits
--proposal-wait-s for them in its kernel phase. Writes $OUT/optimize/ (report.md, breakdown.json, campaign.png, the
call log calls-LABEL.json).

A campaign longer than one device command (10 minutes) runs as several: each call of this script starts or resumes
the same session in --workspace (kept on the warm machine between commands; optimize_h200.sh also packs its state for
a cold one) and stops at its own --deadline-s; the ledger carries the budget spent, the verdicts and the queue over.

    python3 lab/device-runs/optimize_h200.py [--layers 8] [--budget-gpu-hours 0.5] [--deadline-s 1500] [--propose JSON] [--workspace DIR]
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
POLL_S = 20.0


async def main(args: argparse.Namespace) -> None:
    out = Path(os.environ.get("OUT", "/tmp/device-out")) / "optimize"
    ws = Path(args.workspace).resolve() if args.workspace else out / "ws"
    out.mkdir(parents=True, exist_ok=True)
    ws.mkdir(parents=True, exist_ok=True)
    source = Path(args.workload_file)
    if not (ws / source.name).is_file():  # a resume keeps the file the workload was frozen from
        shutil.copy(source, ws / source.name)
    async with logged_tool(ws, "optimize", out / f"calls-{args.label}.json") as call:
        start = {"action": "start", "workload": f"{source.name}:build", "session": "qwen2",
                 "knobs": json.loads(args.knobs) if args.knobs else {"layers": str(args.layers)},
                 "budget_gpu_hours": args.budget_gpu_hours, "deadline_s": args.deadline_s, "pairs": args.pairs,
                 "steps_per_leg": args.steps_per_leg, "proposal_wait_s": args.proposal_wait_s}
        if args.levers:
            start["levers"] = json.loads(args.levers)
        if args.profile_kernels != "auto":
            start["profile_kernels"] = args.profile_kernels == "on"
        await call(start)
        for levers in json.loads(args.propose) if args.propose else []:
            await call({"action": "propose", "session": "qwen2", "levers": levers, "note": "from the device script"})
        while (status := await call({"action": "status", "session": "qwen2"})).get("state") == "running":
            await anyio.sleep(POLL_S)
        report = await call({"action": "report", "session": "qwen2"})
        for r in report.get("records", []):
            res = r["result"]
            print(f"  #{r['seq']} {r['phase']}: {' + '.join(res['levers'])} vs {' + '.join(r['reference']) or 'baseline'}: {r['decision']} "
                  f"{res['verdict']} {res.get('speedup') or ''} ({r['device_s']:.0f} device-s) {res['reason'][:160]}")
        print(f"final: {status.get('summary')}")
    copy_named(ws / ".hyperloom" / "optimize" / "qwen2", out, ("report.md", "breakdown.json", "campaign.png"))
    shutil.rmtree(ws / ".hyperloom" / "workload" / "qwen2" / "runs", ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--workload-file", default=str(REPO / "examples" / "workloads" / "decoder.py"),
                        help="a factory file (build); a CPU dry run passes a small one")
    parser.add_argument("--knobs", default=None, help="JSON knob values (default: the decoder's layers)")
    parser.add_argument("--budget-gpu-hours", type=float, default=0.5)
    parser.add_argument("--deadline-s", type=float, default=1500.0)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--steps-per-leg", type=int, default=2)
    parser.add_argument("--proposal-wait-s", type=float, default=0.0)
    parser.add_argument("--levers", default=None, help="JSON list of levers tried alone (default: every applicable one)")
    parser.add_argument("--propose", default=None, help="JSON list of lever lists to propose after the start")
    parser.add_argument("--profile-kernels", choices=("auto", "on", "off"), default="auto",
                        help="the campaign's own kernel proposals (auto: on a GPU)")
    parser.add_argument("--workspace", default=None, help="the campaign's workspace (default $OUT/optimize/ws); the same one resumes")
    parser.add_argument("--label", default="1", help="names this command's call log (calls-LABEL.json)")
    anyio.run(main, parser.parse_args())
