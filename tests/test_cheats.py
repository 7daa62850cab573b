"""The exploit corpus: kernels that lie (tests/fixtures/cheats), each named after its trick, each refused by the check
that names the trick, while the honest kernel passes. bench on the host CPU; the GPU twins run in tests/test_cheats_gpu.py."""

from __future__ import annotations

import shutil

import pytest

from helpers import FIXTURES, fingerprint_the_seed, refused_by
from hyperloom.core.evidence import host_device
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.pipeline.roof import measured_roof, record_roof

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
TIMING = {"warmup_s": 0.0, "min_reps": 7, "max_reps": 7, "max_time_s": 5.0, "target_ci": 0.5}

CHEATS = {  # variant: the checks any of which may refuse it (the first is the one its trick meets)
    "cached_outputs": {"fresh_inputs"},
    "poison_only": {"fresh_inputs"},
    "skip_repeat": {"timed_launch"},
    "fewer_when_timed": {"timed_launch"},
    "detects_timing": {"timed_launch"},
    "reads_reference_file": {"timed_launch"},
    "special_cases_seed": {"timed_launch"},
    # its outputs are read as soon as a launch returns; under a loaded machine its thread's race with the next launch
    # decides which check meets it first: two launches then disagree (determinism; sessions 22 and 23, full suite only)
    "background_thread": {"roof", "timed_launch", "fresh_inputs", "determinism"},
    "checks_previous_output": {"roof"},
    "writes_past_end": {"guard"},
    "writes_before_start": {"guard"},
    "partial_output": {"gate"},
    "alternating": {"determinism"},
}


@pytest.fixture(scope="module")
def host_roof(tmp_path_factory: pytest.TempPathFactory):
    """This CPU's read roof, measured once with roofline (as a user runs it before tuning)."""
    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.roofline.models import RooflineRequest
    from hyperloom.tools.roofline.api import run_roofline

    root = tmp_path_factory.mktemp("roofws")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPERLOOM_CACHE_DIR", str(tmp_path_factory.mktemp("roofcache")))
        run_roofline(RooflineRequest(target="host", ceilings=["read"], shape="small", plot=False, same_size_read=False, max_time_s=1.0),
                     Workspace.at(root))
        roof = measured_roof(host_device())
    assert roof is not None and roof.memory_gbps
    return roof


@pytest.fixture
def corpus(workspace, host_roof):
    shutil.copytree(FIXTURES / "cheats", workspace.root / "cheats")
    record_roof(host_device(), host_roof.memory_gbps, host_roof.compute_tflops, host_roof.source)
    spec_path = workspace.root / "cheats" / "kernel.yaml"
    fingerprint_the_seed(spec_path, workspace, 0)
    return workspace


@needs_cc
def test_the_honest_kernel_passes_every_check(corpus):
    result = run_bench(BenchRequest(spec="cheats", variant="honest", target="host", **TIMING), corpus)
    assert result.ok, result.summary
    assert {v.check for v in result.checks} == {"guard", "timed_launch", "fresh_inputs", "determinism",
                                                "roof"} and all(v.passed for v in result.checks)
    assert "under the measured roof" in next(v.summary for v in result.checks if v.check == "roof")


@needs_cc
@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_cheating_kernel_is_refused_by_the_check_its_trick_meets(corpus, cheat):
    result = run_bench(BenchRequest(spec="cheats", variant=cheat, target="host", **TIMING), corpus)
    assert not result.ok and result.kernel is None, f"{cheat} passed: {result.summary}"
    assert refused_by(result) & CHEATS[cheat], f"{cheat} refused by {refused_by(result)}, not {CHEATS[cheat]}: {result.summary}"


@needs_cc
def test_special_casing_the_first_shape_fails_the_gate_at_the_second(corpus):
    # right where it was written for
    assert run_bench(BenchRequest(spec="cheats", variant="special_cases_shape", shape=0, target="host", **TIMING), corpus).ok
    result = run_bench(BenchRequest(spec="cheats", variant="special_cases_shape", shape=1, target="host", **TIMING), corpus)
    assert not result.ok and "gate" in refused_by(result)


@needs_cc
def test_a_constant_that_matches_a_degenerate_reference_is_refused_by_the_reference_audit(corpus):
    for variant in ("constant_output", "honest"):  # against a reference a constant passes, no pass means anything
        result = run_bench(BenchRequest(spec="cheats/ones", variant=variant, target="host", **TIMING), corpus)
        assert not result.ok and refused_by(result) == {"reference_audit"}, result.summary
        assert "a constant passes as y on every input set" in result.summary


def test_spec_check_reports_a_degenerate_reference_and_one_that_ignores_an_input(corpus):
    from hyperloom.tools.spec.check import run_spec_check
    from hyperloom.tools.spec.models import SpecCheckRequest

    ones = run_spec_check(SpecCheckRequest(spec="cheats/ones"), corpus)
    assert not ones.ok and any(p.path == "reference" and p.severity == "error" and "a constant passes as y" in p.cause
                               for p in ones.problems)
    (corpus.root / "cheats" / "reference.py").write_text(
        "import numpy as np\n\ndef axpb(inputs, shape):\n    return {'y': (2 * np.arange(shape['n']) + 1).astype(np.float32)}\n")
    ignores = run_spec_check(SpecCheckRequest(spec="cheats"), corpus)
    assert any(p.severity == "warning" and "does not read x" in p.cause for p in ignores.problems), ignores.problems


RECORDED_GPU = "NVIDIA H200"  # the device name the H200's worker reported in issue 47's run


@pytest.fixture
def on_a_recorded_gpu(monkeypatch):
    """bench's evaluation with every worker's report naming RECORDED_GPU, as a GPU worker's does: the host's name differs."""
    import dataclasses

    import hyperloom.tools.bench.api as bench_api
    from hyperloom.tools.pipeline.evaluate import evaluate
    from hyperloom.tools.runtime.launcher import run_trial

    def relabelled(request, **kwargs):
        return run_trial(request, **kwargs).model_copy(update={"device": RECORDED_GPU})

    def evaluated(launchable, code_object, sets, workspace, plan, *against):
        return evaluate(launchable, code_object, sets, workspace, dataclasses.replace(plan, runner=relabelled), *against)

    monkeypatch.setattr(bench_api, "evaluate", evaluated)
    assert host_device() != RECORDED_GPU


@needs_cc
@pytest.mark.parametrize(("cheat", "check"), [("cached_outputs", "fresh_inputs"), ("partial_output", "gate"), ("writes_past_end", "guard")])
def test_a_refused_candidates_evidence_names_the_device_its_worker_reported_not_the_host(corpus, on_a_recorded_gpu, cheat, check):
    """Issue 47: refused at fresh_inputs on an H200, the evidence named the host's CPU; the passing run named the H200."""
    result = run_bench(BenchRequest(spec="cheats", variant=cheat, target="host", **TIMING), corpus)
    assert not result.ok and check in refused_by(result), result.summary
    assert result.evidence.device == result.device == RECORDED_GPU


@needs_cc
def test_the_cli_prints_a_refused_candidates_evidence_on_the_device_its_worker_reported(corpus, on_a_recorded_gpu, capsys):
    from hyperloom.cli.main import EXIT_FAILED_VERDICT, main

    timing = [f"--{name.replace('_', '-')}={value}" for name, value in TIMING.items()]
    assert main(["bench", "--spec", "cheats", "--variant", "cached_outputs", "--target", "host", *timing]) == EXIT_FAILED_VERDICT
    evidence = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("evidence:"))
    assert f"on {RECORDED_GPU}, target host" in evidence, evidence


@needs_cc
def test_the_mcp_bench_tool_answers_a_refused_candidates_evidence_on_the_device_its_worker_reported(corpus, on_a_recorded_gpu):
    import anyio
    from mcp import Client

    from hyperloom.mcp_server.server import build_server

    async def call():  # type: ignore[no-untyped-def]
        async with Client(build_server(), mode="legacy") as client:
            return await client.call_tool("bench", {"spec": "cheats", "variant": "cached_outputs", "target": "host", **TIMING})

    result = anyio.run(call)
    assert not result.is_error and result.structured_content["ok"] is False, result.content
    assert result.structured_content["evidence"]["device"] == result.structured_content["device"] == RECORDED_GPU
