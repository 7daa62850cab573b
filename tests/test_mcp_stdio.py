"""The installed `hyperloom-mcp` over real stdio, as Claude Code and Codex talk to it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from helpers import KERNELS

pytestmark = pytest.mark.anyio
SERVER = Path(sys.executable).parent / "hyperloom-mcp"


def result_schema(name: str) -> dict:
    """The JSON schema of a catalog tool's result as it is sent (a family's verbs answer with theirs)."""
    from hyperloom.tools.catalog import tool

    return tool(name).result.model_json_schema(mode="serialization")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def served_dir(tmp_path):
    """A folder far from the repository, holding a few arrays; the server starts in it."""
    ref = np.linspace(-1, 1, 4096, dtype=np.float32)
    np.save(tmp_path / "ref.npy", ref)
    np.save(tmp_path / "good.npy", ref + np.float32(1e-5))
    bad = ref.copy()
    bad[100:110] = np.nan
    np.save(tmp_path / "bad.npy", bad)
    return tmp_path


def _error_text(result) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content)


async def test_the_server_lists_schemas_judges_refuses_and_keeps_serving(served_dir):
    assert SERVER.exists(), f"{SERVER} missing: install the package into this environment first"
    params = StdioServerParameters(command=str(SERVER), cwd=str(served_dir))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"correctness_gate", "gate_freeze"} <= set(tools)
        gate = tools["correctness_gate"]
        assert gate.input_schema["required"] == ["candidates"] and gate.output_schema["properties"]["passed"] == {"type": "boolean"}
        assert gate.annotations.read_only_hint and gate.annotations.open_world_hint is False
        assert tools["gate_freeze"].annotations.read_only_hint is False

        updates: list[tuple[float, float | None]] = []

        async def on_progress(progress, total, message):
            updates.append((progress, total))

        passing = await session.call_tool(
            "correctness_gate",
            {"candidates": ["good.npy"], "references": ["ref.npy"], "atol": 1e-4, "rtol": 0},
            read_timeout_seconds=60,
            progress_callback=on_progress,
        )
        assert not passing.is_error and passing.structured_content["passed"] is True
        jsonschema.validate(passing.structured_content, gate.output_schema)
        assert json.loads(passing.content[0].text)["evidence"]["tag"] == "MEASURED"
        assert updates and updates[-1][0] == updates[-1][1]

        failing = await session.call_tool(
            "correctness_gate", {"candidates": ["bad.npy"], "references": ["ref.npy"], "atol": 1e-4, "rtol": 0}
        )
        case = failing.structured_content["cases"][0]
        assert not failing.is_error and failing.structured_content["passed"] is False
        assert case["mismatches"] == 10 and case["nan_count"]["candidate"] == 10
        assert case["first_mismatches"][0] == {"index": [100], "candidate": "nan", "reference": case["first_mismatches"][0]["reference"],
                                               "abs_error": None, "ulp": None}

        bad_calls = {
            "a string where a number belongs": ({"candidates": ["good.npy"], "references": ["ref.npy"], "atol": "tiny", "rtol": 0}, "atol"),
            "no candidates at all": ({"references": ["ref.npy"], "atol": 0, "rtol": 0}, "candidates"),
            "a negative tolerance": ({"candidates": ["good.npy"], "references": ["ref.npy"], "atol": -1, "rtol": 0}, "atol"),
            "an unknown dtype": ({"candidates": [[1]], "references": [[1]], "atol": 0, "rtol": 0, "inline_dtype": "float8"},
                                 "inline_dtype"),
            "a path outside the workspace": ({"candidates": ["/etc/passwd.npy"], "references": ["ref.npy"], "atol": 0, "rtol": 0},
                                             "outside the workspace"),
            "a missing file": ({"candidates": ["nope.npy"], "references": ["ref.npy"], "atol": 0, "rtol": 0}, "does not exist"),
            "a text file": ({"candidates": ["ref.txt"], "references": ["ref.npy"], "atol": 0, "rtol": 0}, "not a .npy file"),
            "mismatched lists": ({"candidates": ["good.npy", "bad.npy"], "references": ["ref.npy"], "atol": 0, "rtol": 0},
                                 "one reference per candidate"),
            "no tolerance": ({"candidates": ["good.npy"], "references": ["ref.npy"]}, "tolerance is not declared"),
        }
        for label, (arguments, expected) in bad_calls.items():
            text = _error_text(await session.call_tool("correctness_gate", arguments))
            assert expected in text, f"{label}: {text}"

        frozen = await session.call_tool(
            "gate_freeze", {"out": "refs", "references": ["ref.npy"], "atol": 1e-4, "rtol": 0, "case_names": ["ramp"]}
        )
        assert not frozen.is_error and frozen.structured_content["reference_set"] == "refs"
        again = await session.call_tool("correctness_gate", {"candidates": ["good.npy"], "reference_set": "refs"})
        assert again.structured_content["passed"] is True and again.structured_content["cases"][0]["name"] == "ramp"
        assert (served_dir / "refs/manifest.json").is_file()


@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                    reason="LLVM is not installed; .ci/run installs clang-19")
async def test_compile_and_verify_prove_instructions_over_stdio(tmp_path):
    for name in ("dot8.hip", "swmmac.hip", "spill.hip"):
        shutil.copy(KERNELS / name, tmp_path / name)
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def code_object(source: str, target: str) -> str:
            result = await session.call_tool("compile_kernel", {"source": source, "targets": [target]}, read_timeout_seconds=120)
            assert not result.is_error and result.structured_content["ok"], result.content[0].text
            return result.structured_content["builds"][0]["code_object"]

        dot8 = await session.call_tool("disasm_verify",
                                       {"code_object": await code_object("dot8.hip", "gfx1201"), "expect": ["v_dot8_i32_iu4"]})
        assert dot8.structured_content["passed"] is True

        swmmac = await session.call_tool("disasm_verify", {"code_object": await code_object("swmmac.hip", "gfx1201"),
                                                           "expect": ["v_swmmac_i32_16x16x64_iu4"]})
        assert swmmac.structured_content["passed"] is True

        spill = await session.call_tool("disasm_verify", {"code_object": await code_object("spill.hip", "gfx1201")})
        flagged = [v for v in spill.structured_content["verdicts"] if not v["passed"]]
        assert spill.structured_content["passed"] is False and flagged[0]["kernel"] == "spill" and "VGPRs" in flagged[0]["note"]

        missing = await session.call_tool("compile_kernel", {"source": "dot8.hip", "targets": ["gfx942"]})
        assert not missing.is_error and missing.structured_content["ok"] is False
        assert "not available on gfx942" in missing.structured_content["summary"] and "dot8-insts" in missing.structured_content["summary"]

        refused = await session.call_tool("compile_kernel",
                                          {"source": "dot8.hip", "targets": ["gfx1201"], "extra_flags": ["-save-temps=obj"]})
        assert "allow-list" in _error_text(refused)
        outside = await session.call_tool("disasm_verify", {"code_object": "/etc/hostname"})
        assert "outside the workspace" in _error_text(outside)
@pytest.mark.skipif(shutil.which("llvm-mc-19") is None, reason="llvm-mc-19 is not installed; .ci/run installs llvm-19")
async def test_the_isa_tools_answer_over_stdio_with_summaries_pages_and_refusals(tmp_path, private_cache):
    shutil.copy(Path(__file__).parent / "fixtures" / "codeobj" / "dot8_lds.gfx1201.hsaco", tmp_path / "k.hsaco")
    env = {**os.environ, "HYPERLOOM_CACHE_DIR": str(private_cache),
           "HYPERLOOM_LLVM_DIR": str(Path(shutil.which("llvm-mc-19")).resolve().parent)}
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path), env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        hints = tools["isa"].annotations  # census, probe and audit: one tool, the verb picked by action
        assert hints.read_only_hint and hints.idempotent_hint and hints.open_world_hint is False and not hints.destructive_hint
        assert (tools["isa"].input_schema["required"] == ["action"]
                and tools["isa"].input_schema["properties"]["action"]["enum"] == ["census", "probe", "audit"])

        summary = await session.call_tool("isa", {"action": "census", "target": "gfx1201"}, read_timeout_seconds=120)
        assert not summary.is_error, summary.content
        jsonschema.validate(summary.structured_content, result_schema("isa_census"))  # a family lists no output schema
        assert (summary.structured_content["instructions"] == []
                and "swmmac" in {c["name"] for c in summary.structured_content["capabilities_present"]})
        assert summary.structured_content["evidence"]["tag"] == "MEASURED"
        assert summary.structured_content["llvm_version"].startswith("19.")

        listed = await session.call_tool("isa", {"action": "census", "target": "gfx1201", "match": "dot8", "limit": 5})
        names = [i["name"] for i in listed.structured_content["instructions"]]
        assert "v_dot8_i32_iu4" in names and listed.structured_content["from_cache"] is True

        lines = ["v_mfma_i32_16x16x32_i8 v[0:3], v[4:5], v[6:7], v[0:3]", "v_dot8_i32_iu4 v1, v2, v3, v4"]
        probe = await session.call_tool("isa", {"action": "probe", "target": "gfx942", "lines": lines},
                                        read_timeout_seconds=60)
        assert [line["error_class"] for line in probe.structured_content["lines"]] == [None, "not_supported_on_this_gpu"]

        audit = await session.call_tool("isa", {"action": "audit", "target": "gfx1201", "paths": ["k.hsaco"]}, read_timeout_seconds=60)
        assert "wmma_int4" in audit.structured_content["unused_capabilities"]

        unknown = _error_text(await session.call_tool("isa", {"action": "census", "target": "gfx9999"}))
        assert "does not know the target 'gfx9999'" in unknown and "gfx1201" in unknown and "Next step" in unknown
        garbage = _error_text(await session.call_tool("isa", {"action": "census", "target": "gfx1201; ls"}))
        assert "target" in garbage
        directive = _error_text(await session.call_tool("isa", {"action": "probe", "target": "gfx1201", "lines": [".include x"]}))
        assert "directives" in directive


async def test_tune_runs_in_the_background_of_the_server_between_calls(tmp_path):
    if shutil.which("cc") is None:
        pytest.skip("no system C compiler (apt-get install gcc)")
    from helpers import FIXTURES

    shutil.copytree(FIXTURES / "specs" / "tune", tmp_path / "tune")
    params = StdioServerParameters(command=str(SERVER), cwd=str(tmp_path))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "tune" in tools and not {"tune_start", "tune_status"} & set(tools)  # one tool, its verbs picked by action
        started = await session.call_tool("tune", {"action": "start",
            "spec": "tune", "session": "m", "flush_cache": False, "max_time_s": 0.2, "min_reps": 6, "target_ci": 0.5,
            "warmup_s": 0.0, "revalidate_pairs": 2, "sweep_shapes": False,
        })
        assert not started.is_error, started
        assert started.structured_content["session"] == "m" and started.structured_content["state"] in ("running", "closed")
        for _ in range(300):
            status = await session.call_tool("tune", {"action": "status", "session": "m"})
            if status.structured_content["state"] != "running":
                break
            import anyio

            await anyio.sleep(0.2)
        assert status.structured_content["state"] == "closed" and status.structured_content["recorded"] == 4
        jsonschema.validate(status.structured_content, result_schema("tune_status"))
        report = await session.call_tool("tune", {"action": "report", "session": "m"})
        assert report.structured_content["leaderboard"][0]["params"] == {"REPEAT": 1}
        assert (tmp_path / ".hyperloom" / "tune" / "m" / "report.md").is_file()
        missing = await session.call_tool("tune", {"action": "status", "session": "nope"})
        assert "no tune session 'nope'" in _error_text(missing)
