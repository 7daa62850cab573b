"""What a host puts in the model's context: the size of tools/list and of default tool answers.

    python bench/payloads.py

tools/list is sent to the model in every session (descriptions, input and output schemas); a tool's
default answer (text plus structured content) lands in the context each call. Targets (issue 23):
tools/list <= 40 KB with every tool typed both ways; every default answer < 16 KB (detect also replays a
captured MI300X machine, where it finds more than on a machine without GPUs, and that machine's GPU node
copied to 8 and 64 nodes, since its answer grows with the GPUs it lists; a captured H200 host's GPU copied to 64).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import numpy as np

TOOLS_LIST_TARGET_KB, ANSWER_TARGET_KB = 40, 16


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str))


async def measure() -> int:
    from mcp.client import Client

    from hyperloom.mcp_server.server import build_server

    async with Client(build_server(), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        descriptions = sum(len(t.description or "") for t in tools)
        inputs = sum(_size(t.input_schema) for t in tools)
        outputs = sum(_size(t.output_schema or {}) for t in tools)
        total_kb = _size(listed) / 1024
        print(f"tools/list: {len(tools)} tools, {total_kb:.1f} KB (descriptions {descriptions / 1024:.1f} KB, input schemas "
              f"{inputs / 1024:.1f} KB, output schemas {outputs / 1024:.1f} KB); target <= {TOOLS_LIST_TARGET_KB} KB: "
              f"{'met' if total_kb <= TOOLS_LIST_TARGET_KB else 'NOT met'}")
        answers = {"isa_census": {"target": "gfx1201"}, "isa_census detail": {"target": "gfx1201", "detail": True},
                   "correctness_gate": {"candidates": ["a.npy"], "references": ["a.npy"], "atol": 0, "rtol": 0},
                   "spec_example": {}, "detect": {}, "detect recorded MI300X": {"root": "mi300x"},
                   "detect recorded MI300X, its node copied to 8 nodes": {"root": "mi300x-8"},
                   "detect recorded MI300X, its node copied to 64 nodes": {"root": "mi300x-64"},
                   "detect recorded H200, its row copied to 64 GPUs": {"root": "h200-64"}}
        worst = 0.0
        for label, arguments in answers.items():
            result = await client.call_tool(label.split()[0], arguments)
            size_kb = (sum(len(getattr(b, "text", "")) for b in result.content) + _size(result.structured_content or {})) / 1024
            worst = max(worst, size_kb)
            print(f"  {label}: {size_kb:.1f} KB (text and structured){' ERROR' if result.is_error else ''}")
        print(f"largest default answer {worst:.1f} KB; target < {ANSWER_TARGET_KB} KB: {'met' if worst < ANSWER_TARGET_KB else 'NOT met'}")
    return 0


def main() -> int:
    import os

    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "a.npy", np.zeros(1000, np.float32))
        # detect answers more on a GPU machine than here: a captured MI300X machine (8 GPUs) replayed
        shutil.copytree(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "detect" / "gfx942-mi300x", Path(tmp) / "mi300x",
                        symlinks=True)
        # detect's answer grows with the GPU nodes it lists: the captured node copied to 8 (an 8-GPU server, or one MI300X in
        # CPX mode) and to 64 (eight MI300X in CPX mode; without detail 8 are listed and the rest counted)
        for count in (8, 64):
            shutil.copytree(Path(tmp) / "mi300x", Path(tmp) / f"mi300x-{count}", symlinks=True)
            nodes = Path(tmp) / f"mi300x-{count}" / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
            for index in range(3, count + 2):
                shutil.copytree(nodes / "2", nodes / str(index))
        # and an NVIDIA host's with the GPUs nvidia-smi lists: the captured H200's row copied to 64 GPUs
        shutil.copytree(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "detect" / "h200", Path(tmp) / "h200-64",
                        symlinks=True)
        for query in (Path(tmp) / "h200-64" / "commands").glob("nvidia-smi --query-gpu=*"):
            row = query.read_text().splitlines()[0].split(", ")
            query.write_text("".join(", ".join([str(i), row[1], f"00000000:{0x10 + i:02x}:00.0", *row[3:]]) + "\n" for i in range(64)))
        os.chdir(tmp)
        os.environ["HYPERLOOM_WORKSPACE"] = tmp
        return anyio.run(measure)


if __name__ == "__main__":
    sys.exit(main())
