"""bfloat16 and the four fp8 formats as real spec dtypes (issue 31, item 1): .npy files that keep them, inputs drawn as
values (never bit patterns), the gate in each dtype's own ULPs with its NaN and Inf rules, poisoned outputs that read as
NaN, the vendors' C++ type names read back from signatures, Hyperloom's offline headers against ml_dtypes, and kernels
gated end to end in bfloat16 and every fp8 format through bench (a C twin, Triton's interpreter)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import yaml

from helpers import REPO, gate
from hyperloom.core.dtypes import FNUZ, NARROW_FLOATS, float_info, has_inf, load_npy, save_npy
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.gate.sources import InMemory, NpyFile
from hyperloom.tools.kernelspec.load import draw_inputs
from hyperloom.tools.kernelspec.models import KernelSpec
from hyperloom.tools.runtime.gpu import poison_byte

FP8 = [name for name in NARROW_FLOATS if name.startswith("float8")]
EXAMPLE = REPO / "kernels" / "examples" / "rmsnorm_bf16"
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 6, "max_time_s": 0.05, "target_ci": 1.0, "flush_cache": False}
HAS_INTERPRETER = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("torch") is not None
needs_interpreter = pytest.mark.skipif(not HAS_INTERPRETER, reason="Triton's interpreter needs triton and torch")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("c++") is None,
                              reason="no system C/C++ compiler (apt-get install g++)")
needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None, reason="clang is not installed")


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(np.uint8 if array.dtype.itemsize == 1 else np.uint16)


def _spec(dtype: str, init: str = "normal") -> KernelSpec:
    return KernelSpec.model_validate({
        "name": "t", "source": "k.c", "language": "c", "variants": {"host": {"entry": "k"}}, "reference": "r.py:r",
        "args": [{"kind": "buffer", "name": "x", "dtype": dtype, "shape": ["n"], "role": "input", "init": init},
                 {"kind": "buffer", "name": "y", "dtype": dtype, "shape": ["n"], "role": "output"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4096}], "tolerance": {"atol": 0, "rtol": 0}})


# --- .npy files keep the dtype ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NARROW_FLOATS)
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_a_narrow_float_array_saved_comes_back_in_its_dtype_and_the_gate_reads_and_hashes_it_as_saved(tmp_path, dtype, layout):
    values = np.array([[0.0, 1.0, -2.5, 0.125], [3.0, -0.0625, 6.0, -1.0]], dtype=np.float32).astype(dtype)
    array = {"C": values, "F": np.asfortranarray(values), "strided": values[:, ::2]}[layout]
    path = tmp_path / "x.npy"
    save_npy(path, array)
    again = np.load(path, allow_pickle=False)  # numpy's own loader, ml_dtypes imported
    assert again.dtype == np.dtype(dtype) and np.array_equal(again.astype(np.float64), array.astype(np.float64))
    assert load_npy(path, mmap_mode="r").dtype == np.dtype(dtype)
    opened = NpyFile.open(path, "x")
    stored = np.ascontiguousarray(array).reshape(-1, order="F" if layout == "F" else "C")
    assert opened.dtype == np.dtype(dtype) and np.array_equal(_bits(opened.read(0, array.size)), _bits(stored))
    assert InMemory(array, "x").sha256() == sha256_file(path)


def test_numpy_save_of_a_bfloat16_array_loses_its_dtype_and_the_gate_says_how_to_keep_it(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(4, ml_dtypes.bfloat16))
    assert np.load(tmp_path / "x.npy").dtype.kind == "V"
    with pytest.raises(HyperloomError, match="dtype is lost") as caught:
        NpyFile.open(tmp_path / "x.npy", "candidate")
    assert "save_npy" in caught.value.next_step


# --- inputs are drawn as values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_inputs_are_values_rounded_to_the_dtype_never_bit_patterns(dtype):
    spec = _spec(dtype)
    seeded = draw_inputs(spec, {"n": 4096})["x"]
    assert seeded.dtype == np.dtype(dtype) and np.isfinite(seeded.astype(np.float64)).all()
    wide = seeded.astype(np.float64)
    assert 0.9 < wide.std() < 1.1 and abs(wide.mean()) < 0.1  # a normal draw, rounded; random bits would span the whole range
    normal = np.random.default_rng([0, sum(map(ord, "seeded"))]).standard_normal(4096)
    assert np.array_equal(_bits(seeded), _bits(normal.astype(dtype)))  # exactly the float64 draw rounded to the dtype
    assert (draw_inputs(spec, {"n": 8}, "ones")["x"].astype(np.float64) == 1.0).all()  # 1.0, not the bit pattern 1
    assert (draw_inputs(spec, {"n": 8}, "zeros")["x"].astype(np.float64) == 0.0).all()
    info = float_info(dtype)
    extremes = draw_inputs(spec, {"n": 256}, "extremes")["x"].astype(np.float64)
    assert set(np.unique(extremes)) <= {0.0, 1.0, float(np.float64(info.max / 4)), -float(np.float64(info.max / 4))}
    tiny = np.abs(draw_inputs(spec, {"n": 256}, "denormals")["x"].astype(np.float64))
    assert (tiny < float(info.smallest_normal)).all() and (tiny > 0).any()


def test_a_uniform_range_beyond_the_dtypes_largest_value_is_refused_not_drawn_as_nan():
    spec = _spec("float8_e4m3fn", init="uniform").model_copy()
    spec.args[0].low, spec.args[0].high = -1000.0, 1000.0
    with pytest.raises(HyperloomError, match="beyond float8_e4m3fn's largest finite value 448"):
        draw_inputs(spec, {"n": 8})


# --- the gate in the dtype's own units -----------------------------------------------------------------------------

def _reference(dtype: str) -> np.ndarray:
    return np.array([1.0, -2.0, 0.375, 3.0, -0.5, 0.0], dtype=np.float32).astype(dtype)


def _stepped(reference: np.ndarray, index: int, steps: int) -> np.ndarray:
    out = reference.copy()
    _bits(out)[index] += steps
    return out


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_one_ulp_of_the_dtype_passes_max_ulp_1_and_two_fail(workspace, dtype):
    reference = _reference(dtype)
    one = gate(workspace, _stepped(reference, 0, 1), reference, max_ulp=1)
    assert one.passed and one.cases[0].max_ulp == 1 and one.cases[0].candidate_dtype == dtype
    two = gate(workspace, _stepped(reference, 0, 2), reference, max_ulp=1)
    assert not two.passed and two.cases[0].first_mismatches[0].ulp == 2


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_a_sign_flip_fails_however_loose_the_ulp_allowance_in_bits(workspace, dtype):
    reference = _reference(dtype)
    flipped = reference.copy()
    flipped[1] = -flipped[1]
    verdict = gate(workspace, flipped, reference, max_ulp=8, rtol=0.5)
    assert not verdict.passed and verdict.cases[0].first_mismatches[0].candidate == 2.0


def test_rtol_is_relative_to_the_value_not_to_the_bit_pattern(workspace):
    reference = np.full(4, 1.0, np.float32).astype(ml_dtypes.bfloat16)
    assert gate(workspace, np.full(4, 1.0078125, np.float32).astype(ml_dtypes.bfloat16), reference, rtol=1e-2).passed  # 1 ulp: 0.8 %
    assert not gate(workspace, np.full(4, 1.5, np.float32).astype(ml_dtypes.bfloat16), reference, rtol=1e-2).passed  # 64 ulps: 50 %


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_nan_is_a_mismatch_unless_the_policy_matches_it_where_the_reference_has_one(workspace, dtype):
    reference = np.array([1.0, np.nan, 2.0], dtype=np.float32).astype(dtype)
    if dtype in FNUZ:
        assert _bits(reference)[1] == 0x80  # the fnuz formats' one NaN
    assert not gate(workspace, reference, reference).passed  # forbid: any NaN fails
    assert gate(workspace, reference, reference, nan_policy="match").passed
    misplaced = np.array([np.nan, np.nan, 2.0], dtype=np.float32).astype(dtype)
    assert not gate(workspace, misplaced, reference, nan_policy="match").passed


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_inf_exists_only_where_the_format_has_it_and_must_then_match_exactly(workspace, dtype):
    overflowed = np.array([np.inf, -np.inf], dtype=np.float32).astype(dtype).astype(np.float64)
    if not has_inf(dtype):  # e4m3fn and the fnuz formats: an overflow is NaN
        assert dtype != "bfloat16" and dtype != "float8_e5m2" and np.isnan(overflowed).all()
        return
    reference = np.array([np.inf, 1.0], np.float32).astype(dtype)
    assert gate(workspace, reference, reference).passed
    assert not gate(workspace, np.array([-np.inf, 1.0], np.float32).astype(dtype), reference, max_ulp=1000).passed


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_ulps_across_zero_count_the_values_between(workspace, dtype):
    tiny = float(float_info(dtype).smallest_subnormal)
    reference = np.array([tiny], np.float64).astype(dtype)
    verdict = gate(workspace, np.array([-tiny], np.float64).astype(dtype), reference, max_ulp=1)
    assert not verdict.passed and verdict.cases[0].first_mismatches[0].ulp == 2  # -tiny, 0, +tiny


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_an_output_the_kernel_never_wrote_reads_as_nan(dtype):
    poisoned = np.full(4, poison_byte(dtype), np.uint8).view(np.dtype(dtype))
    assert np.isnan(poisoned.astype(np.float64)).all()


# --- signatures and headers ----------------------------------------------------------------------------------------

@needs_clang
@pytest.mark.parametrize(("suffix", "includes", "types"), [
    (".hip", ["hip/hip_bf16.h", "hip/hip_bfloat16.h", "hip/hip_fp8.h"],
     {"__hip_bfloat16": "bfloat16", "hip_bfloat16": "bfloat16", "__hip_fp8_e4m3_fnuz": "float8_e4m3fnuz",
      "__hip_fp8_e5m2_fnuz": "float8_e5m2fnuz", "__hip_fp8_e4m3": "float8_e4m3fn", "__hip_fp8_e5m2": "float8_e5m2"}),
    (".cu", ["cuda_bf16.h", "cuda_fp8.h"], {"__nv_bfloat16": "bfloat16", "__nv_fp8_e4m3": "float8_e4m3fn", "__nv_fp8_e5m2": "float8_e5m2"}),
])
def test_spec_init_maps_the_vendors_bfloat16_and_fp8_pointer_types_back_to_spec_dtypes(workspace, suffix, includes, types):
    from hyperloom.tools.spec.init import run_spec_init
    from hyperloom.tools.spec.models import SpecInitRequest

    params = ", ".join(f"{'const ' if i else ''}{t}* __restrict__ p{i}" for i, t in enumerate(types))
    (workspace.root / f"k{suffix}").write_text("".join(f"#include <{h}>\n" for h in includes)
                                               + f"__global__ void k({params}, int n) {{}}\n")
    result = run_spec_init(SpecInitRequest(source=f"k{suffix}", entry="k", out="draft"), workspace)
    assert [(p.kind, p.dtype) for p in result.parameters] == [("buffer", d) for d in types.values()] + [("scalar", "int32")]
    drafted = yaml.safe_load((workspace.root / "draft" / "kernel.yaml").read_text())
    assert [a["dtype"] for a in drafted["args"][:-1]] == list(types.values())


def _all_midpoints(dtype: str) -> np.ndarray:
    """Every finite value of the format, the midpoints between neighbours (ties to even), and values beyond its range."""
    values = np.unique(np.arange(256, dtype=np.uint8).view(np.dtype(dtype)).astype(np.float64))
    values = values[np.isfinite(values)]
    mids = (values[:-1] + values[1:]) / 2
    return np.concatenate([values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                           [1e6, -1e6, np.inf, -np.inf, np.nan, 1e-30]]).astype(np.float32)


@needs_cc
def test_the_offline_fp8_and_bfloat16_headers_decode_and_encode_as_ml_dtypes_does_saturating(tmp_path):
    prelude = REPO / "tools" / "compile" / "prelude" / "common"
    probe = tmp_path / "probe.cpp"
    probe.write_text("""#include <cstdio>
#include "hyperloom_fp8.h"
#include "hyperloom_bf16.h"
template <class T> void run(const char* name, const float* xs, int n) {
  for (int b = 0; b < 256; ++b) { T t; t.__x = (unsigned char)b; float f = (float)t; unsigned u; __builtin_memcpy(&u, &f, 4); printf("%s d %d %u\\n", name, b, u); }
  for (int i = 0; i < n; ++i) { T t(xs[i]); printf("%s e %d %u\\n", name, i, (unsigned)t.__x); }
}
int main(int argc, char** argv) {
  static float xs[8192]; FILE* f = fopen(argv[1], "rb"); int n = (int)fread(xs, 4, 8192, f); fclose(f);
  run<__hip_fp8_e4m3_fnuz>("float8_e4m3fnuz", xs, n); run<__hip_fp8_e5m2_fnuz>("float8_e5m2fnuz", xs, n);
  run<__hip_fp8_e4m3>("float8_e4m3fn", xs, n); run<__hip_fp8_e5m2>("float8_e5m2", xs, n);
  for (int i = 0; i < n; ++i) { __hip_bfloat16 t(xs[i]); printf("bfloat16 e %d %u\\n", i, (unsigned)t.data); }
}
""")  # noqa: E501
    inputs = np.concatenate([_all_midpoints(d) for d in FP8] + [np.random.default_rng(1).standard_normal(512).astype(np.float32)])
    assert inputs.size <= 8192
    inputs.tofile(tmp_path / "x.bin")
    subprocess.run(["c++", "-std=c++17", "-O1", f"-I{prelude}", str(probe), "-o", str(tmp_path / "probe")], check=True, timeout=120)
    lines = subprocess.run([str(tmp_path / "probe"), str(tmp_path / "x.bin")], capture_output=True, text=True, check=True,
                           timeout=60).stdout.split()
    wrong = []
    for name, kind, index, value in zip(lines[0::4], lines[1::4], map(int, lines[2::4]), map(int, lines[3::4]), strict=True):
        dtype = np.dtype(name)
        if kind == "d":
            want = np.array([index], np.uint8).view(dtype).astype(np.float32)
            got = np.array([value], np.uint32).view(np.float32)
            ok = bool(np.isnan(want[0]) and np.isnan(got[0])) or want.view(np.uint32)[0] == got.view(np.uint32)[0]
        else:
            limit = float(float_info(dtype).max)
            x = inputs[index:index + 1]
            # the headers saturate, as ROCm's and CUDA's do
            want = (np.clip(x, -limit, limit) if dtype.name != "bfloat16" else x).astype(dtype)
            ok = (np.isnan(x[0]) and np.isnan(np.array([value],
                                                       _bits(want).dtype).view(dtype).astype(np.float32)[0])) or _bits(want)[0] == value
        if not ok:
            wrong.append((name, kind, index, value))
    assert not wrong, wrong[:10]


@needs_clang
def test_a_hip_kernel_on_bfloat16_and_fnuz_fp8_builds_offline_for_gfx942(workspace):
    from hyperloom.tools.compile.api import compile_kernel
    from hyperloom.tools.compile.models import CompileRequest

    (workspace.root / "k.hip").write_text("""#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#include <hip/hip_fp8.h>
__global__ void k(const __hip_bfloat16* x, __hip_bfloat16* y, __hip_fp8_e4m3_fnuz* q, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = __bfloat162float(x[i]) * 2.0f; y[i] = __float2bfloat16(v); q[i] = __hip_fp8_e4m3_fnuz(v); }
}
""")
    result = compile_kernel(CompileRequest(source="k.hip", targets=["gfx942"],
                                           kernels=["_Z1kPK14__hip_bfloat16PS_P19__hip_fp8_e4m3_fnuzi"]), workspace)
    assert result.ok, result.summary


# --- end to end through bench -------------------------------------------------------------------------------------

@pytest.fixture
def rmsnorm_bf16(workspace) -> Path:
    shutil.copytree(EXAMPLE, workspace.root / "rmsnorm_bf16", ignore=shutil.ignore_patterns("__pycache__"))
    return workspace.root / "rmsnorm_bf16"


def _bench(workspace, variant: str, **options):  # type: ignore[no-untyped-def]
    return run_bench(BenchRequest(spec="rmsnorm_bf16", variant=variant, target="host", shape=0, **QUICK, **options), workspace)


@needs_cc
def test_a_c_twin_on_bfloat16_storage_passes_the_gate_in_bfloat16_ulps_through_bench(workspace, rmsnorm_bf16):
    result = _bench(workspace, "host")
    assert [v.input_set for v in result.gate] == ["seeded", "zeros",
                                                  "ones"] and all(v.passed for v in result.gate), [v.summary for v in result.gate]
    assert result.kernel is not None and "max_ulp=1" in result.gate[0].summary


@needs_cc
def test_a_c_twin_that_flips_a_sign_in_bfloat16_is_rejected(workspace, rmsnorm_bf16):
    twin = (rmsnorm_bf16 / "twin.c").read_text()
    assert "* bf16_to_float(w[c]));" in twin
    (rmsnorm_bf16 / "twin.c").write_text(twin.replace("* bf16_to_float(w[c]));", "* -bf16_to_float(w[c]));"))
    result = _bench(workspace, "host", adversarial=False)
    assert not result.gate[0].passed and "FAIL" in result.gate[0].summary


@needs_interpreter
def test_a_triton_kernel_on_tl_bfloat16_passes_the_interpreter_gate_and_a_wrong_one_fails(workspace, rmsnorm_bf16):
    result = _bench(workspace, "triton")
    assert all(v.passed for v in result.gate), [v.summary for v in result.gate]
    kernel = (rmsnorm_bf16 / "rmsnorm_bf16.py").read_text()
    (rmsnorm_bf16 / "rmsnorm_bf16.py").write_text(kernel.replace("(v * scale * g)", "(v * scale * g * 1.02)"))
    assert not _bench(workspace, "triton", adversarial=False).gate[0].passed  # 2 %: several bfloat16 ulps


SCALE_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def scale(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y + offsets, (tl.load(x + offsets, mask=mask).to(tl.float32) * FACTOR).to(y.dtype.element_ty), mask=mask)
'''


# Triton's interpreter rounds float32 subnormals to bfloat16 wrongly (2 × 2^-133 comes back 0, 6 × 2^-133 as 2^-126),
# so bfloat16 denormals are left out here; fp8's subnormals are normal float32 values.
DENORMALS = {name: [] if name == "bfloat16" else ["denormals"] for name in NARROW_FLOATS}


def _scale_spec(folder: Path, dtype: str, factor: float) -> None:
    folder.mkdir()
    (folder / "scale.py").write_text(SCALE_KERNEL.replace("FACTOR", repr(factor)))
    (folder / "reference.py").write_text("import numpy as np\n\n\ndef scale(inputs, shape):\n    return {'y': "
                                         "inputs['x'].astype(np.float64) * 2.0}\n")
    (folder / "kernel.yaml").write_text(yaml.safe_dump({
        "name": "scale", "source": "scale.py", "language": "triton", "variants": {"triton": {"entry": "scale", "defines": {"BLOCK": 256}}},
        "args": [{"kind": "buffer", "name": "x", "dtype": dtype, "shape": ["n"], "role": "input"},
                 {"kind": "buffer", "name": "y", "dtype": dtype, "shape": ["n"], "role": "output"},
                 {"kind": "scalar", "name": "n", "dtype": "int32", "value": "n"}],
        "launch": {"grid": ["ceil_div(n, 256)"]}, "shapes": [{"n": 1000}], "adversarial": ["zeros", "ones", "extremes", *DENORMALS[dtype]],
        "reference": "reference.py:scale", "tolerance": {"atol": 0, "rtol": 0}}, sort_keys=False))


@needs_interpreter
@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_every_narrow_float_travels_to_triton_and_back_exactly(workspace, dtype):
    _scale_spec(workspace.root / "scale", dtype, 2.0)  # doubling is exact in every format at these values
    result = run_bench(BenchRequest(spec="scale", target="host", shape=0, **QUICK), workspace)
    assert [v.input_set for v in result.gate] == ["seeded", "zeros", "ones", "extremes", *DENORMALS[dtype]]
    assert all(v.passed for v in result.gate), [v.summary for v in result.gate]


@needs_interpreter
def test_a_triton_kernel_wrong_in_fnuz_fp8_is_rejected(workspace):
    _scale_spec(workspace.root / "wrong", "float8_e4m3fnuz", 2.5)
    wrong = run_bench(BenchRequest(spec="wrong", target="host", shape=0, adversarial=False, **QUICK), workspace)
    assert not wrong.gate[0].passed and wrong.gate[0].summary.startswith("FAIL")


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
@pytest.mark.parametrize(("dtype", "target", "says"), [("float8_e4m3fnuz", "sm_90", "the fnuz formats are AMD's"),
                                                       ("float8_e4m3fn", "sm_80", "needs sm_89")])
def test_an_fp8_format_triton_does_not_compile_for_the_target_is_one_error_naming_both(workspace, dtype, target, says):
    from hyperloom.tools.kernelspec.load import load_spec
    from hyperloom.tools.pipeline.build import build_with
    from hyperloom.tools.pipeline.launch import prepare

    _scale_spec(workspace.root / "scale", dtype, 2.0)
    build = build_with(prepare(load_spec(workspace.root / "scale", workspace), None, target, 0), workspace, {})[1]
    assert not build.ok and f"Triton for {target} cannot carry {dtype}" in build.summary and says in build.summary
