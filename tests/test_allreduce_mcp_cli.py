"""allreduce_int6 through the installed stdio server and the `hyperloom allreduce` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from helpers import save
from hyperloom.cli.main import EXIT_INPUT_ERROR, EXIT_OK, main

SERVER = Path(sys.executable).parent / "hyperloom-mcp"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_server_reduces_rank_files_over_gloo_and_refuses_bad_input(tmp_path):
    rng = np.random.default_rng(0)
    for rank in range(2):
        np.save(tmp_path / f"rank{rank}.npy", rng.standard_normal((16, 24)).astype(np.float32))
    bad = np.ones((16, 24), np.float32)
    bad[0, 0] = np.inf
    np.save(tmp_path / "bad.npy", bad)
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tool = next(t for t in (await session.list_tools()).tools if t.name == "allreduce_int6")
        assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is False
        assert {"inputs", "ranks", "shape", "seed", "distribution"} <= set(tool.input_schema["properties"])

        updates: list[tuple[float, float | None]] = []

        async def on_progress(progress, total, message):
            updates.append((progress, total))

        done = await session.call_tool(
            "allreduce_int6", {"inputs": ["rank0.npy", "rank1.npy"], "backend": "gloo", "out": "sum.npy"},
            read_timeout_seconds=180, progress_callback=on_progress,
        )
        assert not done.is_error, done.content[0].text
        jsonschema.validate(done.structured_content, tool.output_schema)
        result = done.structured_content
        assert result["matches_reference"] is True and result["within_bound"] and result["cross_rank_drift"] == 0
        assert result["evidence"]["tag"] == "MEASURED" and "torch" in result["evidence"]["toolchain"]
        assert np.load(tmp_path / "sum.npy").shape == (16, 24) and updates and updates[-1][0] == updates[-1][1]

        generated = await session.call_tool("allreduce_int6", {"ranks": 4, "shape": [1000], "seed": 3, "distribution": "uniform"})
        assert not generated.is_error and generated.structured_content["code_bound"] == 7

        for arguments, expected in (
            ({"inputs": ["rank0.npy", "bad.npy"]}, "rank 1: 1"),
            ({"inputs": ["rank0.npy", "/etc/passwd.npy"]}, "outside the workspace"),
            ({"ranks": 2, "shape": [8], "rounding": "up"}, "rounding"),
            ({"ranks": 2, "shape": [8], "block": 0}, "block"),
        ):
            refused = await session.call_tool("allreduce_int6", arguments)
            text = " ".join(block.text for block in refused.content)
            assert refused.is_error and expected in text, text


def test_allreduce_run_prints_the_statistics_and_json_is_the_result_model(workspace, capsys):
    a = save(workspace, "a.npy", np.linspace(-1, 1, 100, dtype=np.float32))
    assert main(["allreduce", "run", "--input", a, "--input", a, "--block", "16", "--out", "s.npy"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "within" in out and "bit-identical" in out and "vs fp16" in out and "MEASURED" in out
    assert main(["allreduce", "run", "--ranks", "2", "--shape", "3", "--shape", "5", "--dtype", "bfloat16", "--json"]) == EXIT_OK
    result = json.loads(capsys.readouterr().out)
    assert result["shape"] == [3, 5] and result["dtype"] == "bfloat16" and result["within_bound"] is True


def test_allreduce_run_bad_input_is_one_line_and_exit_2(workspace, capsys):
    assert main(["allreduce", "run", "--ranks", "2"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no inputs" in err and "Next step" in err


def test_allreduce_bench_times_int6_against_native_bf16_on_gloo(capsys):
    assert main(["allreduce", "bench", "--ranks", "2", "--max-mib", "1", "--repeats", "1", "--warmup", "0", "--json"]) == EXIT_OK
    result = json.loads(capsys.readouterr().out)
    rows = {row["method"]: row for row in result["rows"]}
    assert set(rows) == {"int6", "native_bf16"} and all(r["size_bytes"] == 1 << 20 and r["time_s"] > 0 for r in rows.values())
    assert 0 < rows["int6"]["max_rel_error"] < 0.1 and rows["native_bf16"]["max_rel_error"] < 0.01
    assert rows["int6"]["wire_bytes_per_rank"] < (1 << 20) / 2.4 and result["evidence"]["tag"] == "MEASURED"
