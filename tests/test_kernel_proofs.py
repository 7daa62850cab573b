"""The shipped kernels' instruction proofs (kernels/proofs.yaml) and their builds on every named target."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.drivers import prelude_dir
from hyperloom.tools.compile.models import CompileRequest

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                 reason="clang is not installed; .ci/run installs clang-19")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc (CUDA toolkit) is not installed")

_spec = importlib.util.spec_from_file_location("hyperloom_kernel_proofs", REPO / "scripts" / "kernel_proofs.py")
proofs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(proofs)
GFX1201 = proofs.proofs_for("gfx1201")


@pytest.fixture
def kernels(workspace):
    shutil.copytree(REPO / "kernels", workspace.root / "kernels")
    return workspace


@needs_clang
@pytest.mark.parametrize("entry", GFX1201, ids=[e["kernel"] for e in GFX1201])
def test_each_shipped_kernel_is_proven_on_gfx1201_without_spills(kernels, entry):
    record = proofs.prove(entry, "gfx1201", kernels, "build")
    assert record["built"] and record["proved"], record
    assert record["resources"]["vgpr_spills"] == 0 and record["resources"]["scratch_bytes"] == 0
    for rule in entry["expect"]:
        assert next(v for v in record["verdicts"] if v["rule"] == rule)["found"] >= 1
    assert not _machine_paths(record), _machine_paths(record)


def _machine_paths(record: object) -> list[str]:
    """Strings in a results record that name a place on the machine that wrote it (absolute paths, temporary folders)."""
    text = json.dumps(record)
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return [s for s in strings if re.search(r"(?:^|-I|-o|-MF|=)/", s) or "hyperloom-build-" in s or str(REPO) in s]


def test_the_written_command_names_no_path_of_the_machine_that_ran_it(tmp_path):
    # The shape of a real command, as compile_kernel reports it (results/kernels/gfx1201.json before paths were taken out).
    command = ["/usr/bin/clang-19", "-x", "hip", "--offload-arch=gfx1201", f"-I{prelude_dir('amd')}", "-MD", "-MF",
               "/tmp/hyperloom-build-zxy6vl3v/code.d", str(tmp_path / "kernels/decode/w4a16.hip"), "-o",
               "/tmp/hyperloom-build-zxy6vl3v/code.hsaco", "&&", "/usr/lib/llvm-19/bin/ld.lld"]
    assert proofs.portable(command, tmp_path) == [
        "clang-19", "-x", "hip", "--offload-arch=gfx1201", "-Ihyperloom/tools/compile/prelude/amd", "-MD", "-MF", "{build}/code.d",
        "kernels/decode/w4a16.hip", "-o", "{build}/code.hsaco", "&&", "ld.lld",
    ]


def test_the_committed_gfx1201_results_cover_every_proof_and_all_passed():
    results = json.loads((REPO / "results" / "kernels" / "gfx1201.json").read_text())
    assert [k["kernel"] for k in results["kernels"]] == [e["kernel"] for e in GFX1201]
    assert all(k["proved"] and k["resources"]["vgpr_spills"] == 0 for k in results["kernels"])
    assert all(k["compile_evidence"]["tag"] == "MEASURED" for k in results["kernels"])
    assert not _machine_paths(results), _machine_paths(results)


def build(workspace, source, target):
    return compile_kernel(CompileRequest(source=source, targets=[target]), workspace).builds[0]


@needs_clang
@pytest.mark.parametrize("target", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("name", ["w4a16", "w4a8", "w4a4"])
def test_the_decode_kernels_build_for_rdna3_and_cdna3_without_spills(kernels, name, target):
    b = build(kernels, f"kernels/decode/{name}.hip", target)
    assert b.ok, b.summary
    assert all(k.vgpr_spills == 0 and k.scratch_bytes == 0 for k in b.kernels)


@needs_clang
@pytest.mark.parametrize("target", ["gfx1100", "gfx942"])
@pytest.mark.parametrize(("name", "instruction"), [("sparse_w4a4", "v_swmmac_i32_16x16x64_iu4"), ("dense_w8a8", "v_wmma_i32_16x16x16_iu8")])
def test_the_prefill_kernels_say_they_are_not_available_on_rdna3_and_cdna3(kernels, name, instruction, target):
    b = build(kernels, f"kernels/prefill/{name}.hip", target)
    assert not b.ok and "not available on this target" in b.summary and instruction in b.summary, b.summary


@needs_nvcc
@pytest.mark.parametrize("name", ["w4a16", "w4a8"])
def test_decode_w4a16_and_w4a8_build_for_the_h200_without_spills(kernels, name):
    b = build(kernels, f"kernels/decode/{name}.hip", "sm_90")
    assert b.ok, b.summary
    assert [k.name for k in b.kernels] == [f"decode_{name}"] and b.kernels[0].vgpr_spills == 0


@needs_nvcc
@pytest.mark.parametrize(("unroll", "prefetch"), [(1, 0), (2, 256), (1, 128)])
def test_the_tensor_core_decode_builds_for_the_h200_without_spills_in_its_tuning_space(kernels, unroll, prefetch):
    defines = [f"HL_UNROLL={unroll}", f"HL_PREFETCH={prefetch}"]
    b = compile_kernel(CompileRequest(source="kernels/decode/w4a16_mma.cu", targets=["sm_90"], defines=defines), kernels).builds[0]
    assert b.ok, b.summary
    assert [k.name for k in b.kernels] == ["decode_w4a16_mma"] and b.kernels[0].vgpr_spills == 0


@needs_nvcc
@pytest.mark.parametrize(("unroll", "group"), [(1, 1), (2, 1), (4, 1), (2, 4)])
def test_the_tiled_decode_builds_every_entry_for_the_h200_without_spills(kernels, unroll, group):
    defines = [f"HL_UNROLL={unroll}", f"HL_TILE_GROUP={group}"]  # group 4: w4a16_grouped's layout
    b = compile_kernel(CompileRequest(source="kernels/decode/w4a16_tiled.cu", targets=["sm_90"], defines=defines), kernels).builds[0]
    assert b.ok, b.summary
    entries = ["decode_w4a16_tiled", "decode_w4a16_tiled_async", "decode_w4a16_tiled_async4"]
    assert sorted(k.name for k in b.kernels) == sorted(entries + [f"{e}_split" for e in entries])
    assert all(k.vgpr_spills == 0 for k in b.kernels)


@needs_nvcc
def test_decode_w4a4_says_it_is_not_available_on_nvidia(kernels):
    b = build(kernels, "kernels/decode/w4a4.hip", "sm_90")
    assert not b.ok and "not available on NVIDIA" in b.summary


def test_every_proof_names_a_source_that_exists():
    listed = yaml.safe_load((REPO / "kernels" / "proofs.yaml").read_text())
    for target, entries in listed.items():
        for entry in entries:
            assert (REPO / entry["source"]).is_file(), (target, entry["source"])
