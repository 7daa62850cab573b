"""spec_init drafts from the compiler's reading of a kernel; filled, the draft checks, gates and benches; a
kernel templated on its block size is tuned over it without source changes."""

from __future__ import annotations

import shutil
import sys

import pytest
import yaml

from helpers import REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.spec.models import SpecCheckRequest, SpecInitRequest
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.kernelspec.entry import expected_name, function_name
from hyperloom.tools.spec.init import run_spec_init
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TuneRequest

sys.path.insert(0, str(REPO / "bench"))
import onboarding  # noqa: E402  (bench/ is a folder of scripts)

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                 reason="clang (LLVM 19) reads kernel signatures")
QUICK = {"min_reps": 6, "max_reps": 20, "max_time_s": 0.3}


@needs_clang
def test_a_templated_hip_kernel_is_drafted_with_its_template_parameter_as_a_define(workspace):
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "src")
    (workspace.root / "src" / "kernel.yaml").unlink()
    result = run_spec_init(SpecInitRequest(source="src/rmsnorm.hip", entry="rmsnorm_f32"), workspace)
    by_name = {p.name: p for p in result.parameters}
    assert result.entry == "rmsnorm_f32<HL_BLOCK_SIZE>" and result.template_parameters == ["block_size"]
    assert (by_name["x"].kind, by_name["x"].dtype, by_name["x"].role) == ("buffer", "float32", "input")
    assert (by_name["y"].role, by_name["cols"].kind, by_name["cols"].dtype, by_name["eps"].dtype) == ("output", "scalar", "int32",
                                                                                                      "float32")
    todo = {p.path for p in result.check.problems if p.severity == "todo"}
    assert {"variants.gpu.defines.HL_BLOCK_SIZE", "args[0].shape[0]", "launch.grid[0]", "tolerance.atol"} <= todo
    assert not result.check.ok and [p for p in result.check.problems if p.severity == "error"] == []


@needs_clang
def test_vector_and_c_parameters_map_to_dtypes(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    gpu = {p.name: p for p in run_spec_init(SpecInitRequest(source="decode/w4a16.hip", entry="decode_w4a16", out="d1"),
                                            workspace).parameters}
    host = {p.name: p for p in run_spec_init(SpecInitRequest(source="decode/w4a16.c", entry="decode_w4a16", out="d2"),
                                             workspace).parameters}
    assert gpu["w"].dtype == "uint32" and "4 lanes" in gpu["w"].type and gpu["w_scales"].dtype == "uint16" and gpu["y"].role == "output"
    assert host["w"].dtype == "uint32" and host["m"].kind == "scalar" and host["m"].dtype == "int32"


@needs_clang
def test_existing_files_are_never_replaced_and_a_missing_entry_is_named(workspace):
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "src")
    with pytest.raises(HyperloomError, match="already exist"):
        run_spec_init(SpecInitRequest(source="src/rmsnorm.hip", entry="rmsnorm_f32", out="src"), workspace)
    before = (workspace.root / "src" / "kernel.yaml").read_bytes()
    with pytest.raises(HyperloomError, match="declares no function 'nope'"):
        run_spec_init(SpecInitRequest(source="src/rmsnorm.hip", entry="nope", out="new"), workspace)
    with pytest.raises(HyperloomError, match="cannot tell the language"):
        run_spec_init(SpecInitRequest(source="src/reference.py", entry="rmsnorm"), workspace)
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_spec_init(SpecInitRequest(source="src/rmsnorm.hip", entry="rmsnorm_f32", out="../elsewhere"), workspace)
    assert (workspace.root / "src" / "kernel.yaml").read_bytes() == before and not (workspace.root / "new").exists()


@needs_clang
@pytest.mark.parametrize("name", onboarding.available() or ["none"])
def test_a_kernel_written_elsewhere_goes_from_spec_init_to_a_gated_bench_in_three_calls(tmp_path, name):
    if name == "none":
        pytest.skip("the upstream kernels are not committed (tests/fixtures/foreign/README.md); bench/onboarding.py needs them")
    result = onboarding.onboard(name, tmp_path, "host", 0, quick=True)
    assert result["calls"] == 3 and result["todo_after_init"] > 0 and result["spec_ok"] and result["gated"], result


def test_the_shipped_templated_example_tunes_its_block_size_as_written(workspace):
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "k")
    report = run_tune(TuneRequest(spec="k", variant="host", target="host", strategy="grid", max_candidates=4, session="t", background=False,
                                  revalidate_pairs=0, sweep_shapes=False, min_reps=6, max_reps=20, max_time_s=0.3), workspace)
    passed = [t for t in report.leaderboard if t.status == "PASSED"]
    assert len(passed) == 4 and {t.params.get("block") for t in passed} == {None, 32, 64, 128}
    assert not list((workspace.root / "k").glob("*.orig")) and "template" in (workspace.root / "k" / "rmsnorm.hip").read_text()
    built = sorted(p.name for p in (workspace.root / ".hyperloom" / "instances").iterdir())
    assert built == ["rmsnorm.rmsnorm_f32_BLOCK.hip", "twin.rmsnorm_f32_BLOCK.cpp"] or built == ["twin.rmsnorm_f32_BLOCK.cpp"]


def test_a_launch_whose_block_differs_from_the_compiled_one_fails_its_gate(workspace):
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "k")
    spec = workspace.root / "k" / "kernel.yaml"
    doc = yaml.safe_load(spec.read_text())
    doc["variants"]["host"]["defines"] = {"BLOCK": 32}  # a fixed template argument: tuning the launch's block now breaks the pair
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert run_bench(BenchRequest(spec="k", variant="host", target="host", **QUICK), workspace).ok
    assert not run_bench(BenchRequest(spec="k", variant="host", target="host", params={"block": 64}, **QUICK), workspace).ok


def test_demangled_names_are_matched_to_the_entry_with_its_defines_filled():
    assert function_name("void rms_norm_f32<256>(float const*, float*, int, float)") == "rms_norm_f32<256>"
    assert function_name("softmax_forward_kernel4(float*, float const*, int, int)") == "softmax_forward_kernel4"
    assert function_name("void ns::k<float, 4>(float*)") == "ns::k<float,4>"
    assert expected_name("k<HL_T, BLOCK>", {"HL_T": "float", "BLOCK": 4}) == "k<float,4>"


def test_a_draft_filled_with_a_host_twin_checks_clean(workspace):
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "src")
    (workspace.root / "src" / "kernel.yaml").unlink()
    (workspace.root / "src" / "reference.py").unlink()
    if shutil.which("clang-19") is None and shutil.which("clang") is None:
        pytest.skip("clang (LLVM 19) reads kernel signatures")
    drafted = run_spec_init(SpecInitRequest(source="src/rmsnorm.hip", entry="rmsnorm_f32", out="src"), workspace)
    path = workspace.root / drafted.spec
    doc = yaml.safe_load(path.read_text())
    example = yaml.safe_load((REPO / "kernels" / "examples" / "rmsnorm" / "kernel.yaml").read_text())
    for key in ("description", "args", "launch", "shapes", "tolerance", "metric", "tuning", "reference"):
        doc[key] = example[key]
    doc["variants"]["gpu"]["defines"] = {"HL_BLOCK_SIZE": {"expr": "block"}}
    doc["variants"]["host"] = {**example["variants"]["host"], "defines": {"BLOCK": {"expr": "block"}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    shutil.copy(REPO / "kernels" / "examples" / "rmsnorm" / "reference.py", workspace.root / "src" / "reference.py")
    checked = run_spec_check(SpecCheckRequest(spec=drafted.spec, targets=["host", "gfx1201"]), workspace)
    assert checked.ok, checked.problems
    assert run_bench(BenchRequest(spec=drafted.spec, variant="host", target="host", **QUICK), workspace).ok
