"""detect through its fronts: the installed stdio server and the `hyperloom detect` / `doctor` command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from detect_helpers import ROOTS
from hyperloom.cli.main import EXIT_INPUT_ERROR, EXIT_OK, main

SERVER = Path(sys.executable).parent / "hyperloom-mcp"
CLI = Path(sys.executable).parent / "hyperloom"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_stdio_server_runs_detect_live_and_on_a_recorded_root(tmp_path):
    shutil.copytree(ROOTS / "gfx1201-rx9070xt", tmp_path / "gfx1201")
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tool = {t.name: t for t in (await session.list_tools()).tools}["detect"]
        assert tool.annotations.read_only_hint and tool.annotations.idempotent_hint and tool.annotations.open_world_hint is False
        assert set(tool.input_schema["properties"]) == {"root", "timeout_s", "detail"} and not tool.input_schema.get("required")

        live = await session.call_tool("detect", {}, read_timeout_seconds=60)
        assert not live.is_error and live.structured_content["gpus"] == []
        jsonschema.validate(live.structured_content, tool.output_schema)
        assert live.structured_content["evidence"]["tag"] == "MEASURED"

        replayed = await session.call_tool("detect", {"root": "gfx1201"}, read_timeout_seconds=60)
        content = replayed.structured_content
        assert not replayed.is_error and content["gpus"][0]["target"] == "gfx1201" and content["layers"]["compiler"] == "fail"
        jsonschema.validate(content, tool.output_schema)

        for arguments, expected in (({"root": "../.."}, "outside the workspace"), ({"timeout_s": 0}, "timeout_s"),
                                    ({"root": "nope"}, "does not exist")):
            refused = await session.call_tool("detect", arguments)
            text = " ".join(block.text for block in refused.content)
            assert refused.is_error and expected in text, text


def test_doctor_prints_the_layers_as_a_table(capsys, monkeypatch):
    monkeypatch.setenv("HYPERLOOM_DETECT_ROOT", str(ROOTS / "h200"))
    assert main(["doctor"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["layer", "status", "check", "finding"]
    assert "NVIDIA driver 580.159.04, CUDA 13.0" in out and "GPU 0: NVIDIA H200 [sm_90]" in out and "peaks (ASSUMED" in out


@pytest.mark.parametrize("root", ["gfx1201-rx9070xt", "gfx942-mi300x"])
def test_the_finding_column_wraps_to_the_terminal_width_with_each_fix_on_its_own_line(capsys, monkeypatch, root):
    monkeypatch.setenv("HYPERLOOM_DETECT_ROOT", str(ROOTS / root))
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["detect"]) == EXIT_OK
    lines = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    fixes = [line for line in lines if "→ fix:" in line]
    assert fixes and all(line.lstrip().startswith("→ fix:") for line in fixes)


def test_detect_json_is_the_result_model(capsys, monkeypatch):
    monkeypatch.setenv("HYPERLOOM_DETECT_ROOT", str(ROOTS / "vega10-perf-manual"))
    assert main(["detect", "--json"]) == EXIT_OK
    result = json.loads(capsys.readouterr().out)
    assert result["layers"]["runtime"] == "warn" and {f["check"] for f in result["findings"]} >= {"trap.perf_level", "trap.vram_holders"}


def test_a_bad_timeout_is_one_line_and_exit_2(capsys):
    assert main(["detect", "--timeout-s", "-1"]) == EXIT_INPUT_ERROR
    assert "timeout_s" in capsys.readouterr().err


def test_the_installed_command_reports_no_gpu_on_this_machine(tmp_path):
    proc = subprocess.run([str(CLI), "detect"], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 0 and "no GPU found" in proc.stdout, proc.stderr
