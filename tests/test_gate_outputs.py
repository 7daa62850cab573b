"""A GPU worker gates its own outputs in memory (tools/gate/outputs.py): the same verdict correctness_gate gives
on the same arrays saved to files, and bench's check_input_set asks for it for GPU kernels against frozen sets."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import REPO, save
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.freeze import freeze
from hyperloom.tools.gate.models import FreezeRequest, GateRequest
from hyperloom.tools.gate.outputs import judge_outputs, output_gate
from hyperloom.tools.runtime.models import TrialResult

RAMP = np.linspace(-1, 1, 3000, dtype=np.float32).reshape(3, 1000)
COUNTS = np.arange(64, dtype=np.int32)


@pytest.fixture
def frozen(workspace):
    refs = [save(workspace, "ref_y.npy", RAMP), save(workspace, "ref_n.npy", COUNTS)]
    freeze(FreezeRequest(out="sets/seeded", references=refs, atol=1e-3, rtol=1e-5, case_names=["y", "n"]), workspace)
    return workspace


def _through_files(workspace, outputs: dict[str, np.ndarray]):
    paths = [save(workspace, f"out_{name}.npy", array) for name, array in outputs.items()]
    return run_gate(GateRequest(candidates=paths, case_names=["seeded:y", "seeded:n"], reference_set="sets/seeded"), workspace)


@pytest.mark.parametrize("y, n", [
    (RAMP + np.float32(5e-4), COUNTS),  # within tolerance
    (RAMP + np.float32(5e-3), COUNTS),  # every y out of tolerance
    (np.where(np.arange(3000).reshape(3, 1000) % 7 == 0, np.float32(np.nan), RAMP), COUNTS + (np.arange(64) == 9)),  # NaNs; one count off
    (RAMP[:2], COUNTS),  # the wrong shape
])
def test_the_verdict_in_memory_is_the_gates_on_the_same_arrays_saved_to_files(frozen, y, n):
    workspace = frozen
    gate = output_gate(workspace.root / "sets/seeded", ["y", "n"], ["seeded:y", "seeded:n"], workspace)
    in_memory = judge_outputs({"y": y, "n": n}, gate)
    files = _through_files(workspace, {"y": y, "n": n})
    assert in_memory.model_dump(exclude={"evidence"}) == files.model_dump(exclude={"evidence"})
    assert in_memory.evidence.inputs_sha256 == files.evidence.inputs_sha256  # the same candidate bytes, references and tolerance


def test_a_gate_for_outputs_the_set_does_not_hold_or_a_set_outside_the_workspace_is_refused(frozen, tmp_path):
    workspace = frozen
    with pytest.raises(HyperloomError, match="1 outputs and 1 case names, but the reference set 'sets/seeded' holds 2"):
        output_gate(workspace.root / "sets/seeded", ["y"], ["seeded:y"], workspace)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(HyperloomError, match="outside the workspace"):
        output_gate(outside, ["y", "n"], ["seeded:y", "seeded:n"], workspace)
    gate = output_gate(workspace.root / "sets/seeded", ["y", "n"], ["seeded:y", "seeded:n"], workspace)
    with pytest.raises(HyperloomError, match="names output 'n', which the launch did not copy back"):
        judge_outputs({"y": RAMP}, gate)


def test_a_gpu_kernels_outputs_are_gated_in_its_worker_and_never_written_out(workspace, monkeypatch):
    """check_input_set for a HIP build (rmsnorm for gfx942) through a warm worker's trial function, run here over
    FakeHip (tests/test_warm_worker.py): the kernel under test writes y as the fake kernel is told."""
    from test_warm_worker import FakeHip

    from hyperloom.tools.pipeline import trial
    from hyperloom.tools.pipeline.trial import check_input_set, stage_input_set
    from hyperloom.tools.pipeline.launch import prepare
    from hyperloom.tools.runtime import drivers, warm_trial
    from hyperloom.tools.kernelspec.load import load_spec

    fake = FakeHip()
    monkeypatch.setattr(drivers, "_bindings", lambda backend: (fake, fake.hipDeviceAttribute_t, drivers.HIP))
    monkeypatch.setattr(warm_trial, "_REUSE", warm_trial.Reuse())
    monkeypatch.setattr(trial, "_helpers_if_built", lambda launchable, workspace: None)  # no device helpers: inputs copied from the host
    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "rmsnorm")
    launchable = prepare(load_spec(workspace.root / "rmsnorm", workspace), "gpu", "gfx942", 0)
    assert launchable.backend == "hip"
    staged, outputs = workspace.root / "staged", workspace.root / "out"
    stage_input_set(launchable, "seeded", staged)
    reference = np.load(staged / "ref_y.npy")
    freeze(FreezeRequest(out="sets/seeded", references=["staged/ref_y.npy"], **launchable.loaded.spec.tolerance.model_dump()), workspace)
    (workspace.root / "kernel.hsaco").write_bytes(b"\x7fELF fake")
    monkeypatch.setattr(trial, "run_gate", lambda *a, **k: pytest.fail("a GPU kernel's outputs were gated in the caller's process"))
    requests = []

    def runner(request, timeout_s, device=None):
        requests.append(request)
        return TrialResult.model_validate(warm_trial.run_payload(request.model_dump(mode="json")))

    def check():
        return check_input_set(launchable, "kernel.hsaco", "seeded", staged, outputs, workspace, timeout_s=30, device=0,
                               reference_set=workspace.root / "sets/seeded", runner=runner)

    def writes(values: np.ndarray):
        return lambda buffers: fake.memory[buffers[1]].__setitem__(slice(0, values.nbytes), values.astype(np.float32).tobytes())

    fake.on_launch = writes(reference)
    right = check()
    assert right.passed and right.summary.startswith("PASS: 1/1") and not right.nan
    assert requests[-1].gate is not None and [c.case for c in requests[-1].gate.checks] == ["seeded:y"]
    fake.on_launch = writes(reference + 1e-3)
    off = check()
    assert not off.passed and "FAIL: 1/1" in off.summary and not off.nan
    fake.on_launch = None  # writes nothing: the poisoned outputs read as NaN
    untouched = check()
    assert not untouched.passed and untouched.nan
    assert not outputs.exists() or not any(outputs.iterdir())  # nothing written out: compared where they were


def test_an_array_in_memory_hashes_as_the_npy_file_numpy_would_write():
    import hashlib
    import io

    from hyperloom.tools.gate.sources import InMemory

    arrays = [np.arange(10, dtype=np.float32), np.random.default_rng(0).random((3, 4, 5)), np.asfortranarray(np.ones((6, 7))),
              np.arange(20.0)[::2], np.array(3.5), np.zeros((0, 3), np.int16)]
    for array in arrays:
        saved = io.BytesIO()
        np.save(saved, array, allow_pickle=False)
        assert InMemory(array, "x").sha256() == hashlib.sha256(saved.getvalue()).hexdigest(), array.shape


def test_a_large_output_is_judged_on_a_sample_and_a_skipped_tenth_is_still_found():
    from hyperloom.tools.gate.models import Tolerance
    from hyperloom.tools.gate.outputs import SAMPLE_ELEMENTS, judge_sampled

    reference = np.arange(40 * SAMPLE_ELEMENTS, dtype=np.float32)
    partial = reference.copy()
    partial[::10] = np.nan  # a tenth of the work skipped
    tolerance = Tolerance(atol=0, rtol=0)
    assert judge_sampled({"y": reference.copy()}, {"y": reference}, tolerance, {"y": "t:y"}, seed=1).passed
    verdict = judge_sampled({"y": partial}, {"y": reference}, tolerance, {"y": "t:y"}, seed=2)
    assert not verdict.passed and verdict.cases[0].elements == SAMPLE_ELEMENTS
