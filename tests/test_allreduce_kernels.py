"""kernels/allreduce: INT6 device pack / unpack-accumulate / dequantize, gated on the host, built for GPUs."""

from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pytest

from helpers import REPO
from kernel_modules import kernel_module
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.models import CompileRequest

reference = kernel_module("allreduce", "reference")
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 6, "max_time_s": 0.5, "flush_cache": False}
needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                 reason="clang is not installed; .ci/run installs clang-19")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not __import__("pathlib").Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc (CUDA toolkit) is not installed")


def test_the_wire_layout_puts_each_code_in_its_six_bits_low_byte_first():
    data = reference.pack_int6(np.array([-1, 0, 1, -32], np.int8))
    word = 0x3F | 0 << 6 | 1 << 12 | 0x20 << 18
    assert data.tolist() == [word & 0xFF, (word >> 8) & 0xFF, word >> 16]
    every = np.arange(-32, 32, dtype=np.int8)
    assert np.array_equal(reference.unpack_int6(reference.pack_int6(every)), every)


@pytest.mark.skipif(importlib.util.find_spec("hyperloom.tools.allreduce") is None,
                    reason="the allreduce reference (issue 'allreduce') is not installed")
def test_pack_and_unpack_match_the_allreduce_reference_bit_for_bit():
    from hyperloom.tools.allreduce import packing

    rng = np.random.default_rng(0)
    codes = rng.integers(-32, 32, size=4 * 10_000, dtype=np.int8)
    data = rng.integers(0, 256, size=3 * 10_000, dtype=np.uint8)
    assert np.array_equal(reference.pack_int6(codes), packing.pack_int6(codes))
    assert np.array_equal(reference.unpack_int6(data), packing.unpack_int6(data))


def test_codes_outside_six_bits_are_refused():
    with pytest.raises(HyperloomError, match=r"\[-32, 31\]"):
        reference.pack_int6(np.array([0, 0, 0, 32], np.int8))


@pytest.mark.parametrize(("spec", "shape"), [("pack", 0), ("unpack", 0), ("unpack_add", 0), ("unpack_add", 1)])
def test_the_host_twins_pass_their_exact_gates_through_bench(workspace, spec, shape):
    shutil.copytree(REPO / "kernels" / "allreduce", workspace.root / "allreduce")
    result = run_bench(BenchRequest(spec=f"allreduce/{spec}", variant="host", target="host", shape=shape, **QUICK), workspace)
    assert result.ok and len(result.gate) == 3, result.summary


@needs_clang
@pytest.mark.parametrize("target", ["gfx1201", "gfx1100", "gfx942"])
def test_the_int6_kernels_build_for_amd_targets_without_spills(workspace, target):
    shutil.copytree(REPO / "kernels" / "allreduce", workspace.root / "allreduce")
    b = compile_kernel(CompileRequest(source="allreduce/int6.hip", targets=[target]), workspace).builds[0]
    assert b.ok and {k.name for k in b.kernels} == {"int6_pack", "int6_unpack_add", "int6_unpack_accumulate"}
    assert all(k.vgpr_spills == 0 and k.scratch_bytes == 0 for k in b.kernels)


@needs_nvcc
def test_the_int6_kernels_build_for_the_h200(workspace):
    shutil.copytree(REPO / "kernels" / "allreduce", workspace.root / "allreduce")
    b = compile_kernel(CompileRequest(source="allreduce/int6.hip", targets=["sm_90"]), workspace).builds[0]
    assert b.ok and all(k.vgpr_spills == 0 for k in b.kernels), b.summary
