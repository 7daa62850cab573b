"""`hyperloom demo` on this CPU-only machine: every step through the real MCP server, a report with tags."""

from __future__ import annotations

import json
import shutil

import anyio
import pytest

from hyperloom.demo.report import brief
from hyperloom.demo.run import run_demo
from hyperloom.tools.detect.parts import PARTS

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None or shutil.which("llvm-mc-19") is None,
                                reason="LLVM 19 is not installed; .ci/run installs it")


def test_the_demo_maps_compiles_and_proves_and_says_what_stays_assumed(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(__import__("pathlib").Path(shutil.which("llvm-mc-19")).resolve().parent))
    lines: list[str] = []
    report = anyio.run(run_demo, tmp_path / "demo", "gfx1201", lines.append)
    assert [s.tool for s in report.steps] == ["detect", "isa census", "compile_kernel", "disasm_verify", "compile_kernel", "disasm_verify"]
    assert all(s.ok for s in report.steps) and len(lines) == len(report.steps)
    tags = {f.tag for f in report.figures}
    assert tags == {"MEASURED", "ASSUMED"}
    proofs = {f.name: int(f.value.removesuffix(" instructions")) for f in report.figures if ": @dot4_i8" in f.name or ": v_dot8" in f.name}
    # a rule that is its own spelling is not repeated
    assert proofs["decode_w4a8: @dot4_i8 (v_dot4_i32_iu8)"] > 0 and proofs["decode_w4a4: v_dot8_i32_iu4"] > 0
    assert any("fastest possible" in f.name and f.tag == "ASSUMED" for f in report.figures)
    assert report.gpu == "none" and any("no gfx1201 GPU here" in claim for claim in report.not_measured)
    saved = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert saved["steps"][0]["tool"] == "detect"
    text = (tmp_path / "demo" / "report.md").read_text()
    assert "**ASSUMED**" in text
    part = next(p for p in PARTS if p.target == "gfx1201")
    assert f"| {part.source} |" in text  # the datasheet link whole
    census = next(s for s in report.steps if s.tool == "isa census")
    shown = next(line for line in text.splitlines() if "`isa census`" in line).split(" | ")[-1].removesuffix(" |")
    assert len(census.summary) > 400 and shown.endswith(" …") and census.summary.startswith(shown.removesuffix(" …"))
    assert census.summary[len(shown.removesuffix(" …"))] in " ,.;"  # cut between words, never inside one
    assert all(f.value.split()[-1] in UNITS or f.tag == "ASSUMED" for f in report.figures), [f.value for f in report.figures]


UNITS = {"aliases", "bytes", "instructions", "us", "GB/s", "TFLOP/s", "%"}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Short.", "Short."),
        ("First sentence here. " + "word " * 100, "First sentence here. …"),
        ("One. " + "x" * 10 + " yy" * 30, "One. xxxxxxxxxx yy yy yy yy yy yy yy …"),
    ],
)
def test_a_long_summary_is_cut_at_a_sentence_or_a_word(text, shown):
    assert brief(text, 40 if "yy" in text else 30) == shown
