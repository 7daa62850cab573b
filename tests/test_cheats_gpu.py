"""The exploit corpus's GPU twins (tests/fixtures/cheats/gpu/cheats.hip) on an NVIDIA GPU: every one refused by the check
its trick meets, the honest kernel passes; and offline, what asks more of a workgroup than its target allows."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, fingerprint_the_seed, refused_by
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.pipeline.candidate import Unbuilt, build_candidate
from hyperloom.tools.pipeline.launch import prepare

HAS_CUDA = importlib.util.find_spec("cuda") is not None and shutil.which("nvidia-smi") is not None and (
    shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists())
needs_nvidia_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs an NVIDIA GPU with its driver, nvcc and cuda-python")
TIMING = {"warmup_s": 0.0, "min_reps": 7, "max_reps": 7, "max_time_s": 5.0, "target_ci": 0.5}
CHEATS = {
    "cached_outputs": {"fresh_inputs"},
    "poison_only": {"fresh_inputs"},
    "skip_repeat": {"timed_launch"},
    "fewer_when_timed": {"timed_launch"},
    "special_cases_seed": {"timed_launch"},
    # the timed launch's outputs are poisoned first, so the blocks that see the flag leave poison
    "checks_previous_output": {"timed_launch", "roof"},
    "writes_past_end": {"guard"},
    "writes_before_start": {"guard"},
    "partial_output": {"gate"},
    "alternating": {"determinism"},
}
needs_llvm_amdgpu = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                       reason="no clang with the AMDGPU target (apt-get install clang-19 lld-19)")


@pytest.fixture
def gpu_corpus(workspace):
    shutil.copytree(FIXTURES / "cheats", workspace.root / "cheats")
    spec_path = workspace.root / "cheats" / "gpu" / "kernel.yaml"
    fingerprint_the_seed(spec_path, workspace, 1)
    return workspace


@needs_llvm_amdgpu
@pytest.mark.parametrize("variant", ["lds_overflow", "too_many_threads"])
def test_a_kernel_asking_more_of_a_workgroup_than_gfx942_allows_is_refused_before_it_runs(gpu_corpus, variant):
    launchable = prepare(load_spec(gpu_corpus.root / "cheats" / "gpu", gpu_corpus), variant, "gfx942", 1)
    built = build_candidate(launchable, {}, gpu_corpus, expect=[], forbid=[])
    assert isinstance(built, Unbuilt) and built.status == "RESOURCE_LIMIT", built
    assert ("65536" in built.reason) if variant == "lds_overflow" else ("2048 threads" in built.reason and "1024" in built.reason)


@needs_llvm_amdgpu
def test_the_honest_gpu_kernel_builds_for_gfx942_within_its_limits(gpu_corpus):
    launchable = prepare(load_spec(gpu_corpus.root / "cheats" / "gpu", gpu_corpus), "honest", "gfx942", 1)
    assert not isinstance(build_candidate(launchable, {}, gpu_corpus, expect=[], forbid=[]), Unbuilt)


@pytest.fixture
def gpu_roof(gpu_corpus):
    """The GPU's read roof, measured first with roofline (as a user runs it before tuning)."""
    from hyperloom.tools.roofline.api import run_roofline
    from hyperloom.tools.roofline.models import RooflineRequest

    run_roofline(RooflineRequest(target="sm_90", ceilings=["read"], plot=False, same_size_read=False, max_time_s=2.0), gpu_corpus)
    return gpu_corpus


@needs_nvidia_gpu
def test_on_the_gpu_the_honest_twin_passes_and_every_cheating_twin_is_refused_by_its_check(gpu_roof):
    honest = run_bench(BenchRequest(spec="cheats/gpu", variant="honest", target="sm_90", **TIMING), gpu_roof)
    assert honest.ok, honest.summary
    assert all(v.passed for v in honest.checks) and "under the measured roof" in next(v.summary for v in honest.checks if v.check == "roof")
    outcomes = {}
    for cheat, expected in CHEATS.items():
        result = run_bench(BenchRequest(spec="cheats/gpu", variant=cheat, target="sm_90", **TIMING), gpu_roof)
        outcomes[cheat] = (result.ok, refused_by(result), result.summary[:300])
    passed = {c: o for c, o in outcomes.items() if o[0]}
    wrong = {c: o for c, o in outcomes.items() if not o[0] and not o[1] & CHEATS[c]}
    print("\n".join(f"{c}: {'PASSED' if o[0] else 'refused by ' + ', '.join(sorted(o[1]))} | {o[2]}" for c, o in outcomes.items()))
    assert not passed and not wrong, (passed, wrong)
    for variant in ("lds_overflow", "too_many_threads"):  # refused on sm_90 too, before any launch
        with pytest.raises(Exception, match="resource limit"):
            run_bench(BenchRequest(spec="cheats/gpu", variant=variant, target="sm_90", **TIMING), gpu_roof)
