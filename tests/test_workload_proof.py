"""Proof of work and the step's roof (tools/workload/work.py, proof.py, roof.py) on profiles captured from the cheat
corpus's workload (tests/fixtures/workload_profile/: one step of tests/fixtures/workload_cheats/workload/seeded.py
profiled by profiled_step.profiled on a CPU, eager and under torch.compile)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers import REPO, write_roofline
from hyperloom.core.evidence import host_device
from hyperloom.tools.workload.levers import lever
from hyperloom.tools.workload.models import ClassWork, StepWork
from hyperloom.tools.workload.checks.proof import POW_FRACTION, short_of_work
from hyperloom.tools.workload.checks.roof import ROOF_SLACK, impossible, known_ceilings, step_roof
from hyperloom.tools.workload.work import step_work

PROFILES = REPO / "tests" / "fixtures" / "workload_profile"
PARAMETER_BYTES = 2102272  # Linear(256, 1024) and Linear(1024, 256) in float32, as the worker reported it
STEP_FLOPS = 6 * 2 * 64 * 256 * 1024  # three forwards (redundant=2) of two 64 x 256 x 1024 GEMMs


def _work(name: str) -> StepWork:
    return step_work(PROFILES / f"{name}.json", PARAMETER_BYTES)


@pytest.mark.parametrize("name", ["seeded_cpu_step", "seeded_cpu_compiled_step"])
def test_a_profiled_step_s_work_is_counted_by_class_eager_and_compiled_alike(name):
    work = _work(name)
    gemm = work.classes["gemm"]
    assert (gemm.ops, gemm.flops) == (6, STEP_FLOPS) and gemm.time_s > 0  # aten::linear's addmm counted once, not twice
    assert work.compute_flops_by_dtype == {"float": STEP_FLOPS} and not work.device_timed
    assert work.classes["attention"].ops == 0 and work.classes["other"].ops > 0


def test_a_step_that_did_none_of_the_work_is_refused_naming_both_figures():
    said = short_of_work(_work("seeded_cpu_step"), StepWork(classes={}, parameter_bytes=PARAMETER_BYTES, device_timed=False), [])
    assert said is not None and "proof of work" in said and "0 ops against 6" in said and "0 of the baseline's 201.3 MFLOP" in said, said


@pytest.mark.parametrize(("flops_share", "time_share", "refused"),
                         [(1 / 3, 1 / 3, False), (0.2, 0.2, True), (1.0, 0.1, False), (0.1, 0.5, False)])
def test_a_step_is_short_of_work_only_when_both_its_flops_and_its_time_are_under_a_quarter(flops_share, time_share, refused):
    """TF32 or a faster GEMM cuts the time and keeps the flops; a replayed graph or compiled code records no op but keeps the kernels'
    time."""
    base = _work("seeded_cpu_step")
    gemm = base.classes["gemm"]
    mine = base.model_copy(update={"classes": {**base.classes, "gemm": ClassWork(ops=gemm.ops, flops=int(gemm.flops * flops_share),
                                                                                 time_s=gemm.time_s * time_share)}})
    assert (short_of_work(base, mine, []) is not None) == refused
    assert POW_FRACTION == 0.25


def test_a_lever_that_declares_less_work_is_not_refused_by_proof_of_work():
    nothing = StepWork(classes={}, parameter_bytes=None, device_timed=False)
    cache = replace(lever("knob:redundant=0"), less_work="a cache: results of earlier inputs are reused by design")
    assert short_of_work(_work("seeded_cpu_step"), nothing, [lever("compile")]) is not None
    assert short_of_work(_work("seeded_cpu_step"), nothing, [lever("compile"), cache]) is None


def test_a_cpu_with_no_known_ceiling_has_no_roof_and_says_so(workspace):
    device = host_device()
    ceilings, source = known_ceilings(workspace, device)
    roof = step_roof(_work("seeded_cpu_step"), ceilings, source, device)
    assert ceilings == [] and roof.roof_s is None and roof.note.startswith("no roof: no ceiling known for this CPU"), roof
    assert impossible(roof, 1e-9) is None


def test_a_measured_roofline_in_the_workspace_sets_the_roof_and_a_step_under_it_is_impossible(workspace):
    device = host_device()
    write_roofline(workspace, device, fma_tflops=0.4, memory_gbps=200.0)
    ceilings, source = known_ceilings(workspace, device)
    roof = step_roof(_work("seeded_cpu_step"), ceilings, source, device)
    expected_s = ROOF_SLACK * max(STEP_FLOPS / 0.4e12, PARAMETER_BYTES / 200e9)
    assert roof.roof_s == pytest.approx(expected_s) and roof.tag == "MEASURED" and "MEASURED" in roof.source, roof
    said = impossible(roof, expected_s / 10)
    assert said is not None and "10x under" in said and "roof" in said and "MEASURED" in said, said
    assert impossible(roof, expected_s * 1.01) is None


def test_a_roofline_of_another_device_is_not_used(workspace):
    write_roofline(workspace, "NVIDIA H100 80GB HBM3", fma_tflops=60.0, memory_gbps=3000.0)
    assert known_ceilings(workspace, host_device()) == ([], "")


def test_on_a_known_gpu_the_larger_of_the_datasheet_and_a_measured_ceiling_sets_an_assumed_roof(workspace):
    device = "NVIDIA H200"
    datasheet, _ = known_ceilings(workspace, device)
    assert datasheet and all(c.evidence.tag.value == "ASSUMED" for c in datasheet)
    write_roofline(workspace, device, fma_tflops=1.0, memory_gbps=100.0)  # below the datasheet: the datasheet's figures bound the roof
    ceilings, source = known_ceilings(workspace, device)
    roof = step_roof(_work("seeded_cpu_step"), ceilings, source, device)
    memory = max(c.value for c in datasheet if c.kind == "memory")
    fp32 = max(c.value for c in datasheet if c.name == "datasheet FP32")
    assert roof.roof_s == pytest.approx(ROOF_SLACK * max(STEP_FLOPS / (fp32 * 1e12), PARAMETER_BYTES / (memory * 1e9)))
    assert roof.tag == "ASSUMED" and "datasheet" in roof.source and "MEASURED" in roof.source, roof


class _Worker:
    """What profiled_work calls on a worker: its info and one profiled step's engagement, the seed it was given kept."""

    def __init__(self, has_inputs: bool) -> None:
        self.info, self.seeds = {"has_inputs": has_inputs, "device": None}, []

    def engagement(self, trace=None, seed=None):  # noqa: ANN001
        self.seeds.append(seed)
        return {"ops": {}, "kernels": {}}


def test_a_candidate_s_profiled_step_runs_on_the_reference_s_seed_so_input_dependent_work_compares(workspace, tmp_path):
    """A generate that stops at EOS does work that depends on its prompt: counted on two fresh prompts a fused model's
    GEMMs read 174 against its reference's 696 (NO_OP for an honest fuse_projections). The reference's profiled seed,
    drawn by the controller, is the candidate's."""
    from hyperloom.tools.workload.checks.proof import profiled_work, reference_evidence

    reference, candidate = _Worker(True), _Worker(True)
    evidence = reference_evidence(reference, tmp_path / "r", workspace)
    assert isinstance(evidence["profiled_seed"], int) and reference.seeds == [evidence["profiled_seed"]]
    seen, _ = profiled_work(candidate, tmp_path / "c", proof=False, seed=evidence["profiled_seed"])
    assert candidate.seeds == reference.seeds and seen["profiled_seed"] == evidence["profiled_seed"]
    profiled_work(candidate, tmp_path / "c", proof=False)  # bench's own calls without a reference's seed: a fresh one
    assert candidate.seeds[-1] != evidence["profiled_seed"]
    fixed = _Worker(False)  # a workload without inputs(seed) gets none
    profiled_work(fixed, tmp_path / "f", proof=False, seed=evidence["profiled_seed"])
    assert fixed.seeds == [None]
