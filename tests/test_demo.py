"""`hyperloom demo` on this CPU-only machine: every step through the real MCP server, a report with tags."""

from __future__ import annotations

import json
import shutil

import anyio
import pytest

from hyperloom.demo.run import run_demo

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None or shutil.which("llvm-mc-19") is None, reason="LLVM 19 is not installed; .ci/run installs it")


def test_the_demo_maps_compiles_and_proves_and_says_what_stays_assumed(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(__import__("pathlib").Path(shutil.which("llvm-mc-19")).resolve().parent))
    lines: list[str] = []
    report = anyio.run(run_demo, tmp_path / "demo", "gfx1201", lines.append)
    assert [s.tool for s in report.steps] == ["detect", "isa_census", "compile_kernel", "disasm_verify", "compile_kernel", "disasm_verify"]
    assert all(s.ok for s in report.steps) and len(lines) == len(report.steps)
    tags = {f.tag for f in report.figures}
    assert tags == {"MEASURED", "ASSUMED"}
    proofs = {f.name.split(":")[0]: int(f.value) for f in report.figures if "(v_dot" in f.name}
    assert proofs["decode_w4a8"] > 0 and proofs["decode_w4a4"] > 0
    assert any("fastest possible" in f.name and f.tag == "ASSUMED" for f in report.figures)
    assert report.gpu == "none" and any("no gfx1201 GPU here" in claim for claim in report.not_measured)
    saved = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert saved["steps"][0]["tool"] == "detect"
    assert "**ASSUMED**" in (tmp_path / "demo" / "report.md").read_text()
