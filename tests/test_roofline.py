"""roofline on the host CPU (c backend): ceilings measured through bench, kernels placed, files written."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.roofline.api import run_roofline
from hyperloom.tools.roofline.ceilings import available, shipped_microbench_dir
from hyperloom.tools.roofline.models import RooflineRequest
from hyperloom.tools.roofline.datasheet import datasheet_ceilings

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")


def test_the_microbenchmarks_ship_inside_the_package():
    assert {p.name for p in shipped_microbench_dir().iterdir()} >= {"copy", "read", "write", "fma", "mma_f16"}
    assert available("host") == ["copy", "read", "fma"] and "mma_f16" in available("sm_90") and "mma_f16" not in available("gfx1201")
    assert "matrix_i4" in available("gfx1201") and "matrix_i4" not in available("gfx942") and "matrix_i8" in available("gfx942")


@needs_cc
def test_host_ceilings_are_measured_and_a_kernel_is_placed_under_them(workspace):
    shutil.copytree(shipped_microbench_dir(), workspace.root / "mb")
    bench = run_bench(BenchRequest(spec="mb/copy", variant="host", target="host", max_time_s=0.5, min_reps=6, adversarial=False), workspace)
    (workspace.root / "copy.json").write_text(bench.model_dump_json())
    result = run_roofline(RooflineRequest(target="host", shape="small", max_time_s=0.5, place=["copy.json"]), workspace)
    assert [c.name for c in result.measured] == ["copy", "read", "fma"]
    assert all(c.value > 0 and c.evidence.tag.value == "MEASURED" for c in result.measured)
    (placed,) = result.placements
    best_memory = max((c for c in result.measured if c.kind == "memory"), key=lambda c: c.value)  # copy or read: close on a CPU
    assert placed.bound == "memory" and placed.roof == best_memory.name and 0 < placed.percent_of_roof < 200
    assert (placed.same_size_read_gbps > 0
            and placed.percent_of_same_size_read == pytest.approx(100 * placed.achieved_gbps / placed.same_size_read_gbps))
    read_shapes = yaml.safe_load((workspace.root / ".hyperloom/microbench/read/kernel.yaml").read_text())["shapes"]
    assert 4 * read_shapes[-1]["n"] == bench.bytes_moved // 16 * 16  # the read moves the kernel's bytes, in whole float4s
    saved = json.loads((workspace.root / ".hyperloom/roofline/roofline.json").read_text())
    assert saved["measured"][0]["name"] == "copy"
    assert {f.rsplit(".", 1)[-1] for f in result.files} == {"json", "png", "svg"}
    assert (workspace.root / ".hyperloom/roofline/roofline.png").stat().st_size > 1000


@needs_cc
def test_the_same_size_read_is_skipped_on_request_and_for_a_result_without_bytes(workspace):
    shutil.copytree(shipped_microbench_dir(), workspace.root / "mb")
    bench = run_bench(BenchRequest(spec="mb/copy", variant="host", target="host", max_time_s=0.2, min_reps=6, adversarial=False), workspace)
    (workspace.root / "copy.json").write_text(bench.model_dump_json())
    (workspace.root / "flops.json").write_text(bench.model_copy(update={"bytes_moved": None, "bandwidth_gbps": None, "flops": 1000,
                                                                        "tflops": 1e-6}).model_dump_json())
    off = run_roofline(RooflineRequest(target="host", shape="small", max_time_s=0.2, ceilings=["copy", "fma"], place=["copy.json"],
                                       same_size_read=False, plot=False), workspace)
    assert off.placements[0].same_size_read_gbps is None and off.placements[0].percent_of_same_size_read is None
    no_bytes = run_roofline(RooflineRequest(target="host", shape="small", max_time_s=0.2, ceilings=["copy", "fma"], place=["flops.json"],
                                            plot=False), workspace)
    assert no_bytes.placements[0].bound == "compute" and no_bytes.placements[0].same_size_read_gbps is None


def test_datasheet_peaks_are_assumed_and_name_their_source():
    ceilings = datasheet_ceilings("NVIDIA H200", "sm_90")
    assert [c.value for c in ceilings] == [4800, 67.0, 989.4]
    assert all(c.evidence.tag.value == "ASSUMED" and "datasheet" in c.source.lower() for c in ceilings)
    assert datasheet_ceilings("host CPU: AMD EPYC", "host") == []


def test_a_file_that_is_not_a_bench_result_is_refused(workspace):
    (workspace.root / "x.json").write_text('{"hello": 1}')
    with pytest.raises(HyperloomError, match="not a bench result"):
        run_roofline(RooflineRequest(target="host", shape="small", place=["x.json"]), workspace)


def test_a_microbenchmark_the_target_cannot_run_is_refused(workspace):
    with pytest.raises(HyperloomError, match="no variant for host"):
        run_roofline(RooflineRequest(target="host", ceilings=["mma_f16"]), workspace)


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="LLVM is not installed; .ci/run installs clang-19")
@pytest.mark.parametrize(
    ("bench", "target", "instruction"),
    [
        ("matrix_f16", "gfx1201", "v_wmma_f32_16x16x16_f16"), ("matrix_f16", "gfx1100", "v_wmma_f32_16x16x16_f16"),
        ("matrix_f16", "gfx942", "v_mfma_f32_32x32x8_f16"), ("matrix_f16", "gfx90a", "v_mfma_f32_32x32x8f16"),
        ("matrix_i8", "gfx1201", "v_wmma_i32_16x16x16_iu8"), ("matrix_i8", "gfx1100", "v_wmma_i32_16x16x16_iu8"),
        ("matrix_i8", "gfx942", "v_mfma_i32_16x16x32_i8"), ("matrix_i8", "gfx90a", "v_mfma_i32_32x32x8i8"),
        ("matrix_i4", "gfx1201", "v_wmma_i32_16x16x16_iu4"), ("matrix_i4", "gfx1100", "v_wmma_i32_16x16x16_iu4"),
    ],
)
def test_the_amd_matrix_microbenchmarks_use_each_generations_matrix_instruction(workspace, bench, target, instruction):
    from hyperloom.tools.compile.api import compile_kernel
    from hyperloom.tools.compile.models import CompileRequest
    from hyperloom.tools.verify.models import VerifyRequest
    from hyperloom.tools.verify.api import verify

    shutil.copytree(shipped_microbench_dir() / bench, workspace.root / "m")
    build = compile_kernel(CompileRequest(source="m/matrix.hip", targets=[target], defines=["CHAINS=4"]), workspace).builds[0]
    assert build.ok, build.summary
    proof = verify(VerifyRequest(code_object=build.code_object, expect=[f"{instruction}>=4"]), workspace)
    assert proof.passed, proof.summary
    assert bench in available(target)
