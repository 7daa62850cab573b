"""profile through the installed `hyperloom-mcp` over real stdio, as an agent calls it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from helpers import FIXTURES, REPO

pytestmark = pytest.mark.anyio
SERVER = Path(sys.executable).parent / "hyperloom-mcp"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _error_text(result) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content)


async def test_profile_reads_a_trace_and_runs_a_workload_over_stdio(tmp_path):
    shutil.copy(FIXTURES / "profile" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz", tmp_path / "mi250.json.gz")
    shutil.copy(FIXTURES / "profile" / "a100_alexnet_trace.json.gz", tmp_path / "a100.json.gz")
    shutil.copy(REPO / "results" / "h200" / "roofline.json", tmp_path / "h200_roofline.json")
    (tmp_path / "step.py").write_text("import torch\ntorch.relu(torch.randn(64, 64) @ torch.randn(64, 64))\n")
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        profile = tools["profile"]
        assert profile.annotations.read_only_hint is False and profile.annotations.open_world_hint is True
        assert "workload" in profile.input_schema["properties"] and "trace" in profile.input_schema["properties"]

        updates: list[tuple[float, float | None]] = []

        async def on_progress(progress, total, message):
            updates.append((progress, total))

        read = await session.call_tool("profile", {"trace": "mi250.json.gz", "plot": False}, read_timeout_seconds=120,
                                       progress_callback=on_progress)
        assert not read.is_error, read.content
        jsonschema.validate(read.structured_content, profile.output_schema)
        content = read.structured_content
        assert content["launch_bound"] is True and content["device"] == "AMD Radeon Graphics" and content["evidence"]["tag"] == "ASSUMED"
        assert content["kernels"][0]["name"] == "Memcpy HtoD (Host -> Device)" and updates and updates[-1][0] == updates[-1][1]

        ran = await session.call_tool("profile", {"workload": "step.py", "steps": 1, "warmup_steps": 0, "plot": False},
                                      read_timeout_seconds=300)
        assert not ran.is_error, ran.content
        assert ran.structured_content["evidence"]["tag"] == "MEASURED" and ran.structured_content["gpu"] is False
        assert any(h["label"].startswith("aten::mm [64, 64] float32") for h in ran.structured_content["hotspots"])

        other = _error_text(await session.call_tool("profile", {"trace": "a100.json.gz", "roofline": "h200_roofline.json"}))
        assert "measured on 'NVIDIA H200', but the trace ran on 'NVIDIA A100" in other and "Next step" in other
        both = _error_text(await session.call_tool("profile", {"trace": "a100.json.gz", "workload": "step.py"}))
        assert "exactly one of workload" in both
        outside = _error_text(await session.call_tool("profile", {"trace": "/etc/hostname"}))
        assert "outside the workspace" in outside
