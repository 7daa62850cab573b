"""compile_kernel: real offline builds with LLVM 19 (and nvcc where present), cache, diagnostics."""

from __future__ import annotations

import shutil

import pytest

from helpers import FIXTURES, copy_kernel
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.cache import parse_depfile
from hyperloom.tools.compile.diagnostics import parse_diagnostics, parse_remarks
from hyperloom.tools.compile.models import CompileRequest
from hyperloom.tools.compile.resources import nvidia_kernels

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                 reason="clang is not installed; .ci/run installs clang-19")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not __import__("pathlib").Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc (CUDA toolkit) is not installed")


def build(workspace, source, *targets, **options):
    return compile_kernel(CompileRequest(source=source, targets=list(targets), **options), workspace)


@needs_clang
def test_a_hip_kernel_builds_offline_with_its_resource_usage(workspace):
    result = build(workspace, copy_kernel(workspace, "dot8.hip"), "gfx1201", kernels=["dot8"])
    (b,) = result.builds
    assert result.ok and b.ok and not b.cache_hit and (workspace.root / b.code_object).is_file()
    (k,) = b.kernels
    assert k.name == "dot8" and k.vgprs > 0 and k.sgprs > 0 and k.vgpr_spills == 0 and k.wavefront_size == 32
    assert k.occupancy_waves_per_simd and k.max_workgroup_size == 1024
    assert result.evidence.tag.value == "MEASURED" and result.evidence.toolchain["clang"].startswith("19")


@needs_clang
def test_an_unchanged_build_is_served_from_the_cache_and_an_edited_header_invalidates_it(workspace):
    (workspace.root / "inc").mkdir()
    (workspace.root / "inc/scale.h").write_text("#define SCALE 2.0f\n")
    (workspace.root / "k.hip").write_text(
        '#include <hip/hip_runtime.h>\n#include "scale.h"\n'
        'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n'
    )
    first = build(workspace, "k.hip", "gfx1100", include_dirs=["inc"]).builds[0]
    again = build(workspace, "k.hip", "gfx1100", include_dirs=["inc"]).builds[0]
    assert not first.cache_hit and again.cache_hit and again.code_object == first.code_object
    assert again.kernels == first.kernels and again.compile_s == 0
    (workspace.root / "inc/scale.h").write_text("#define SCALE 3.0f\n")
    assert not build(workspace, "k.hip", "gfx1100", include_dirs=["inc"]).builds[0].cache_hit


@needs_clang
def test_a_builtin_the_target_lacks_is_named_as_a_missing_feature(workspace):
    result = build(workspace, copy_kernel(workspace, "dot8.hip"), "gfx942")
    (b,) = result.builds
    assert not result.ok and not b.ok and b.code_object is None
    assert "not available on gfx942" in b.summary and "dot8-insts" in b.summary
    assert b.diagnostics[0].file == "dot8.hip" and b.diagnostics[0].line == 5


@needs_clang
def test_a_syntax_error_comes_back_as_diagnostics_with_lines(workspace):
    (b,) = build(workspace, copy_kernel(workspace, "syntax_error.hip"), "gfx1201").builds
    assert not b.ok
    error = next(d for d in b.diagnostics if d.severity == "error")
    assert (error.file, error.line, error.column) == ("syntax_error.hip", 3, 12) and "expected ';'" in error.message


@needs_clang
def test_one_source_builds_for_rdna_and_cdna_in_one_call(workspace):
    source = copy_kernel(workspace, "spill.hip")
    result = build(workspace, source, "gfx1201", "gfx942", "gfx90a", "gfx1100", "gfx1201")
    assert result.ok and [b.target for b in result.builds] == ["gfx1201", "gfx942", "gfx90a", "gfx1100"]
    waves = {b.target: b.kernels[0].wavefront_size for b in result.builds}
    assert waves == {"gfx1201": 32, "gfx942": 64, "gfx90a": 64, "gfx1100": 32}
    spill = next(k for k in result.builds[0].kernels if k.name == "spill")
    assert spill.vgpr_spills > 0 and spill.scratch_bytes > 0


@needs_clang
def test_wave64_on_rdna_is_a_parameter(workspace):
    (b,) = build(workspace, copy_kernel(workspace, "dot8.hip"), "gfx1201", wavefront_size=64).builds
    assert b.kernels[0].wavefront_size == 64
    with pytest.raises(HyperloomError, match="wave64 only"):
        build(workspace, "dot8.hip", "gfx942", wavefront_size=32)


@needs_clang
def test_assembly_builds_with_llvm_mc_and_lld(workspace):
    (b,) = build(workspace, copy_kernel(workspace, "scale.s"), "gfx1201", kernels=["double_it"]).builds
    assert b.ok and b.kernels[0].name == "double_it" and b.kernels[0].vgprs is None
    assert b.compiler.name == "llvm-mc" and "&&" in b.command


@needs_clang
def test_a_kernel_name_that_is_not_built_fails_the_build(workspace):
    (b,) = build(workspace, copy_kernel(workspace, "dot8.hip"), "gfx1201", kernels=["dot8", "dot16"]).builds
    assert not b.ok and "dot16" in b.summary


@needs_nvcc
def test_hip_source_builds_for_nvidia_through_the_compatibility_header(workspace):
    (b,) = build(workspace, copy_kernel(workspace, "spill.hip"), "sm_90").builds
    assert b.ok and b.code_object.endswith(".cubin")
    assert {k.name for k in b.kernels} == {"spill", "privarr"} and all(k.vgprs for k in b.kernels)


@pytest.mark.parametrize(
    ("flag", "accepted"),
    [("-ffast-math", True), ("-Wall", True), ("-munsafe-fp-atomics", True), ("-o/etc/passwd", False),
     ("-save-temps=obj", False), ("-Xclang", False), ("-fplugin=/tmp/x.so", False), ("-Wl,-o,/tmp/x", False),
     ("-I/etc", False), ("-include/etc/passwd", False), ("-MF/tmp/x", False)],
)
def test_only_allow_listed_flags_reach_the_compiler(workspace, flag, accepted):
    request = CompileRequest(source=copy_kernel(workspace, "dot8.hip"), targets=["gfx1201"], extra_flags=[flag])
    if accepted:
        if shutil.which("clang-19") or shutil.which("clang"):
            assert compile_kernel(request, workspace).ok
    else:
        with pytest.raises(HyperloomError, match="allow-list"):
            compile_kernel(request, workspace)


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"source": "../outside.hip", "targets": ["gfx1201"]}, "outside the workspace"),
        ({"source": "dot8.hip", "targets": ["gfx1201"], "output_dir": "/tmp"}, "outside the workspace"),
        ({"source": "dot8.hip", "targets": ["navi48"]}, "not a target name"),
        ({"source": "dot8.hip", "targets": ["gfx1201"], "defines": ["X=1; rm -rf /"]}, "not NAME or NAME=VALUE"),
        ({"source": "dot8.hip", "targets": ["sm_90"], "compiler": "clang"}, "use compiler nvcc"),
        ({"source": "notes.txt", "targets": ["gfx1201"]}, "cannot tell the language"),
    ],
)
def test_bad_requests_are_refused_before_any_compiler_runs(workspace, request_fields, message):
    copy_kernel(workspace, "dot8.hip")
    (workspace.root / "notes.txt").write_text("hi")
    with pytest.raises(HyperloomError, match=message):
        compile_kernel(CompileRequest(**request_fields), workspace)


def test_a_missing_compiler_names_the_package_to_install(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "none"))
    monkeypatch.delenv("HYPERLOOM_LLVM_DIR", raising=False)
    with pytest.raises(HyperloomError, match="clang was not found.*apt-get install clang-19"):
        compile_kernel(CompileRequest(source=copy_kernel(workspace, "dot8.hip"), targets=["gfx1201"]), workspace)


def test_clang_and_nvcc_messages_parse_into_diagnostics():
    text = (
        "k.hip:3:12: error: expected ';' at end of declaration\n"
        "k.cu(7): warning #177-D: variable \"x\" was declared but never referenced\n"
        "clang: error: unsupported option '--bogus'\n"
        "ptxas error   : Entry function 'lds_read' uses too much shared data (0x10000 bytes, 0xc000 max)\n"
        "ptxas info    : Used 73 registers, used 1 barriers, 65536 bytes smem\n"
    )
    diagnostics = parse_diagnostics(text)
    assert [(d.file, d.line, d.severity) for d in diagnostics] == [("k.hip", 3, "error"), ("k.cu", 7, "warning"), ("", None, "error"),
                                                                   ("", None, "error")]
    assert diagnostics[-1].message.startswith("Entry function 'lds_read' uses too much shared data")


def test_clang_resource_remarks_parse_per_kernel():
    text = (FIXTURES / "compile" / "rowsum.gfx1201.remarks.txt").read_text()
    remarks = parse_remarks(text)
    assert remarks["rowsum"]["Occupancy [waves/SIMD]"] == "16" and remarks["rowsum"]["LDS Size [bytes/block]"] == "1024"


def test_ptxas_verbose_output_parses_per_kernel():
    (k,) = nvidia_kernels((FIXTURES / "compile" / "add.sm_90.ptxas.txt").read_text())
    assert (k.name, k.vgprs, k.lds_bytes, k.vgpr_spills, k.scratch_bytes) == ("add", 10, 512, 0, 0)


def test_depfiles_with_continuations_and_escaped_spaces_parse():
    text = "out.o: a.hip /usr/include/x.h \\\n  my\\ dir/b.h\n"
    assert [str(p) for p in parse_depfile(text)] == ["a.hip", "/usr/include/x.h", "my dir/b.h"]


needs_triton = pytest.mark.skipif(__import__("importlib").util.find_spec("triton") is None,
                                  reason="triton is not installed (pip install 'hyperloom[triton]')")


@needs_triton
@needs_clang
def test_a_triton_kernel_builds_for_rdna_and_cdna_and_is_verified(workspace):
    from hyperloom.tools.verify.models import VerifyRequest
    from hyperloom.tools.verify.api import verify

    source = copy_kernel(workspace, "add_triton.py")
    signature = ["x_ptr:*fp32", "y_ptr:*fp32", "out_ptr:*fp32", "n:i32", "BLOCK:constexpr"]
    result = build(workspace, source, "gfx1201", "gfx942", kernels=["add_kernel"], triton_signature=signature, defines=["BLOCK=1024"])
    assert result.ok and [b.compiler.name for b in result.builds] == ["triton", "triton"]
    waves = {b.target: b.kernels[0].wavefront_size for b in result.builds}
    assert waves == {"gfx1201": 32, "gfx942": 64}
    proof = verify(VerifyRequest(code_object=result.builds[0].code_object, expect=["global_load_*", "v_add_f32"]), workspace)
    assert proof.passed


def test_a_triton_build_without_its_signature_is_refused(workspace):
    (workspace.root / "k.py").write_text("x = 1\n")
    if __import__("importlib").util.find_spec("triton") is None:
        with pytest.raises(HyperloomError, match="need the triton package"):
            build(workspace, "k.py", "gfx1201", kernels=["k"])
    else:
        with pytest.raises(HyperloomError, match="needs triton_signature"):
            build(workspace, "k.py", "gfx1201", kernels=["k"])


def test_a_host_build_says_it_built_a_host_library_not_zero_kernels(workspace):
    (workspace.root / "scale.c").write_text("void scale(float *x, int n) { for (int i = 0; i < n; ++i) x[i] *= 2.0f; }\n")
    (b,) = build(workspace, "scale.c", "host", kernels=["scale"]).builds
    assert b.ok and b.kernels == [], b.summary
    assert b.summary.startswith(f"host library {b.code_object} for scale built for the CPU") and "kernel(s)" not in b.summary, b.summary
