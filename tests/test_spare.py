"""A kept candidate worker (tools/workload/spare.py, runner.serve): the workload built once, each candidate served a
fresh copy with its levers; what one candidate did (compiled code, dynamo's counters, a changed model) gone before
the next; levers that change the process, a workload that cannot be copied and a failed trial get fresh workers."""

from __future__ import annotations


import pytest

from hyperloom.tools.workload.ab import load_outputs
from hyperloom.tools.workload.levers import lever
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess, enter_together
from hyperloom.tools.workload.spare import Spare, Where, servable

torch = pytest.importorskip("torch")

WORKLOAD = '''
import threading
import time
import torch
import torch._inductor.config

BUILDS = []

class Small:
    def __init__(self, lock, pause_s, fail):
        began = time.time()
        time.sleep(pause_s)
        if fail:
            raise RuntimeError("this build fails")
        self.built_at = torch.tensor([began, time.time()], dtype=torch.float64)
        BUILDS.append(1)
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
        self.x = torch.randn(8, 16)
        self.builds = len(BUILDS)
        if lock:
            self.lock = threading.Lock()  # cannot be deep-copied

    def inputs(self, seed):
        self.x.copy_(torch.randn(8, 16, generator=torch.Generator().manual_seed(seed)))

    def step(self):
        with torch.inference_mode():
            self.y = self.model(self.x)

    def outputs(self):
        settings = [torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32, torch._inductor.config.combo_kernels]
        return {"y": self.y, "builds": torch.tensor([self.builds]), "built_at": self.built_at, "settings": torch.tensor(settings)}

def build(lock: bool = False, pause_s: float = 0.0, fail: bool = False):
    return Small(lock, pause_s, fail)
'''


@pytest.fixture
def small(workspace):
    (workspace.root / "small.py").write_text(WORKLOAD)
    return workspace


def _where(ws, **knobs):
    return Where(Target("small.py:build", "function", (), knobs), ws, timeout_s=120.0)


def test_a_kept_worker_serves_the_next_candidates_a_fresh_copy_without_building_again(small, tmp_path):
    spare, where = Spare(), _where(small)
    with spare.candidate(where, [lever("compile")], tmp_path / "a", None) as first:
        assert first.info["reusable"] and spare.turn == 1
        first.warmup(2)
        compiled = first.engagement()
        assert compiled["compiled_graphs"] >= 1
        pid = first.pid
    with spare.candidate(where, [], tmp_path / "b", None) as second:
        assert second.pid == pid and spare.turn == 2 and second.folder == tmp_path / "b"
        second.warmup(1)
        plain = second.engagement()
        assert plain.get("compiled_graphs", 0) == 0, "dynamo's compiled code and counters are reset between candidates"
        second.outputs(tmp_path / "b" / "out")
    import numpy as np

    assert int(np.load(tmp_path / "b" / "out" / "builds.npy")[0]) == 1, "the copy is of the workload as built once"
    with pytest.raises(WorkloadFailure):  # between candidates the kept worker holds no copy to step: it was released
        spare.process.warmup(1)
    spare.close()
    assert spare.process is None


def test_a_setting_lever_is_served_by_the_kept_worker_and_put_back_before_the_next_candidate(small, tmp_path):
    """On the H100 a 1.2B decoder's combo-kernel candidate and its stack's reference were each built afresh (24 s of
    host build); a setting is now served and what it replaced put back, the worker's own defaults kept."""
    import numpy as np

    assert servable([lever("cudnn_benchmark")]) and servable([lever("tf32"),
                                                              lever("compile")]) and servable([lever("inductor_combo_kernels")])
    spare, where = Spare(), _where(small)
    seen = {}
    for name, levers in (("plain", []), ("on", [lever("cudnn_benchmark"), lever("tf32"), lever("inductor_combo_kernels")]), ("after", [])):
        with spare.candidate(where, levers, tmp_path / name, None) as worker:
            worker.warmup(1)
            worker.outputs(tmp_path / name / "out")
            seen[name] = (worker.pid, spare.turn, np.load(tmp_path / name / "out" / "settings.npy").tolist())
    spare.close()
    (pid, _, plain), (on_pid, on_turn, on), (after_pid, after_turn, after) = seen["plain"], seen["on"], seen["after"]
    assert on_pid == after_pid == pid and (on_turn, after_turn) == (2, 3), seen
    assert on == [1, 1, 1] and after == plain and plain[0] == plain[2] == 0, seen  # cuDNN's benchmark, TF32's default, combo kernels


def test_a_workload_whose_copy_would_not_fit_beside_it_on_the_device_is_not_kept_and_says_why():
    """A kept worker holds the workload as built and a copy for the candidate: twice the model. A 1.2B bf16 decoder
    (2.5 GB) is kept on an 80 GB GPU; a 30B one (60 GB) on a 141 GB GPU is not, with the sizes named."""
    from hyperloom.tools.workload.worker.worker_build import too_large_to_copy

    gib = 2**30
    assert too_large_to_copy(int(2.5 * gib), 80 * gib) == ""
    why = too_large_to_copy(60 * gib, 141 * gib)
    assert "60.0 GiB of the device's 141 GiB" in why and "builds its own worker" in why
    assert too_large_to_copy(24 * gib, 80 * gib) == "" and too_large_to_copy(25 * gib, 80 * gib)  # the line: both at 60 % of the device
    assert too_large_to_copy(10, 0) == ""  # no device size read: kept, as before


def test_levers_that_change_the_process_get_a_fresh_worker_each_and_leave_the_kept_one(small, tmp_path):
    assert servable([lever("compile"), lever("static_cache"), lever("channels_last")])
    assert not servable([lever("tunableop")]) and not servable([lever("compile"), lever("tunableop")])
    spare, where = Spare(), _where(small)
    with spare.candidate(where, [], tmp_path / "a", None) as kept:
        pid = kept.pid
    with spare.candidate(where, [lever("tunableop")], tmp_path / "b", None) as fresh:
        assert fresh.pid != pid and spare.turn == 1
    assert spare.process is not None and spare.process.pid == pid  # the kept worker is still there for the next
    with spare.candidate(_where(small, lock="False"), [], tmp_path / "c", None) as other:  # another target: not the kept one
        assert other.pid != pid
    spare.close()


def test_a_workload_that_cannot_be_copied_is_built_for_each_candidate_and_says_why(small, tmp_path):
    spare, where = Spare(), _where(small, lock="True")
    with spare.candidate(where, [], tmp_path / "a", None) as first:
        assert not first.info["reusable"] and "deep-copied" in first.info["not_reusable"]
        pid = first.pid
    assert spare.process is None
    with spare.candidate(where, [], tmp_path / "b", None) as second:
        assert second.pid != pid and spare.turn == 1


def test_a_trial_that_fails_closes_its_worker_and_the_next_candidate_is_built_afresh(small, tmp_path):
    spare, where = Spare(), _where(small)
    with pytest.raises(RuntimeError):
        with spare.candidate(where, [], tmp_path / "a", None) as doomed:
            pid = doomed.pid
            raise RuntimeError("the trial failed")
    assert spare.process is None
    with spare.candidate(where, [], tmp_path / "b", None) as fresh:
        assert fresh.pid != pid and spare.turn == 1
    spare.close()


def test_a_candidate_that_raised_in_its_worker_leaves_that_worker_kept_for_the_next(small, tmp_path):
    """RAISED (the candidate's own exception, the worker alive): the copy released, the worker serves the next
    candidate; a timeout (a worker suspect) still closes it."""
    spare, where = Spare(), _where(small)
    with pytest.raises(WorkloadFailure) as caught:
        with spare.candidate(where, [], tmp_path / "a", None) as first:
            pid = first.pid
            first.serve([lever("tunableop")], tmp_path / "b", None)  # refused in the worker: RAISED
    assert caught.value.status == "RAISED" and spare.process is not None and spare.process.pid == pid
    with spare.candidate(where, [lever("compile")], tmp_path / "c", None) as second:
        assert second.pid == pid and spare.turn == 2
        second.warmup(1)
    with pytest.raises(WorkloadFailure) as caught:
        with spare.candidate(where, [], tmp_path / "d", None) as third:
            assert third.pid == pid
            third.timeout_s = 0.05
            third._call("warmup", {"steps": 100000})  # a step loop that runs past its call's limit: TIMEOUT
    assert caught.value.status == "TIMEOUT" and spare.process is None
    spare.close()


def test_the_worker_refuses_to_serve_a_lever_that_changes_the_process(small, tmp_path):
    with WorkloadProcess(_where(small).target, [], tmp_path / "a", small, 120.0, keep=True) as process:
        with pytest.raises(WorkloadFailure) as caught:
            process.serve([lever("tunableop")], tmp_path / "b", None)
        assert caught.value.status == "RAISED" and "kind env" in caught.value.message
    with WorkloadProcess(_where(small).target, [], tmp_path / "c", small, 120.0) as unkept:  # built without keep
        with pytest.raises(WorkloadFailure) as caught:
            unkept.serve([], tmp_path / "d", None)
        assert "kept no copy" in caught.value.message


def _built_at(process, folder):
    import numpy as np

    process.time(1)
    process.outputs(folder)
    return np.load(folder / "built_at.npy")


def test_the_first_candidates_worker_is_built_beside_the_reference_and_serves_it(small, tmp_path):
    where = _where(small, pause_s="1.5")
    reference = WorkloadProcess(where.target, [], tmp_path / "reference", small, 120.0)
    with Spare() as spare:
        spare.beside(reference, where, tmp_path / "spare")
        try:
            kept = spare.pid
            assert kept is not None and reference.pid not in (None, kept)
            with spare.candidate(where, [], tmp_path / "a", None) as first:  # the A/A's worker: served, not built
                assert first.pid == kept and spare.turn == 2
                ours, theirs = _built_at(reference, tmp_path / "r"), _built_at(first, tmp_path / "a" / "out")
            assert ours[0] < theirs[1] and theirs[0] < ours[1], f"the two builds did not overlap: {ours} {theirs}"
        finally:
            reference.close()


def test_a_spare_that_cannot_be_built_or_kept_is_dropped_and_the_reference_stands(small, tmp_path):
    where = _where(small, lock="True")  # a lock: the workload cannot be deep-copied
    reference = WorkloadProcess(where.target, [], tmp_path / "reference", small, 120.0)
    with Spare() as spare:
        spare.beside(reference, where, tmp_path / "spare")
        assert spare.process is None and reference.info["vendor"] == "cpu"
        reference.close()
    fine, failing = _where(small), _where(small, fail="True")
    kept = WorkloadProcess(failing.target, [], tmp_path / "optional", small, 120.0, keep=True)
    needed = WorkloadProcess(fine.target, [], tmp_path / "needed", small, 120.0)
    assert enter_together([needed], [kept]) == [] and needed.info["vendor"] == "cpu" and not kept.worker.alive
    needed.close()


def test_when_a_required_build_fails_every_worker_built_beside_it_is_closed(small, tmp_path):
    fine, failing = _where(small), _where(small, fail="True")
    needed = WorkloadProcess(failing.target, [], tmp_path / "needed", small, 120.0)
    beside = WorkloadProcess(fine.target, [], tmp_path / "beside", small, 120.0)
    with pytest.raises(WorkloadFailure) as caught:
        enter_together([needed], [beside])
    assert "this build fails" in caught.value.message and not needed.worker.alive and not beside.worker.alive


ENVIRON_PROBE = '''
import os
import torch

class Probe:
    def step(self):
        pass

    def outputs(self):
        return {"teardown": torch.tensor([int(os.environ.get("TEARDOWN_CUPTI", "-1"))])}

def build():
    return Probe()
'''


def test_a_workload_worker_tears_cupti_down_after_a_profile_whatever_its_parent_set(workspace, tmp_path, monkeypatch):
    """Without kineto's CUPTI teardown a profiled process stays slower for good (profiled_step.PROFILER_ENVIRON: 25-35 %
    on the H200), and every worker is profiled before its timed legs."""
    (workspace.root / "probe.py").write_text(ENVIRON_PROBE)
    monkeypatch.setenv("TEARDOWN_CUPTI", "0")
    with WorkloadProcess(Target("probe.py:build", "function", (), {}), [], tmp_path / "a", workspace, 120.0) as process:
        process.outputs(tmp_path / "out")
    assert load_outputs(tmp_path / "out", ["teardown"])["teardown"].tolist() == [1]


def test_a_campaign_s_stack_references_are_served_by_kept_workers_and_given_back_when_the_stack_moves_on(small, tmp_path):
    """A stack's reference costs its levers' work, not a build: the first stack's reference is served by the worker
    built beside the baseline; when the stack moves on, that worker is given back and serves the next stack's; a lever
    that changes the process gets a built reference, closed (not kept) when it retires."""
    from hyperloom.tools.optimize.slots import Slot
    from hyperloom.tools.workload.ab import ABSettings
    from hyperloom.tools.workload.gate.frozen import read_frozen
    from hyperloom.tools.workload.api import workload_freeze
    from hyperloom.tools.workload.models import WorkloadFreezeRequest

    steady = WORKLOAD.replace('"built_at": self.built_at, ', "")
    assert steady != WORKLOAD
    (small.root / "steady.py").write_text(steady)
    workload_freeze(WorkloadFreezeRequest(workload="steady.py:build", name="small", atol=0.0, rtol=0.0, timeout_s=120), small)
    started: list[tuple[list[str], dict[str, float]]] = []
    slot = Slot(None, read_frozen("small", small), ABSettings(pairs=2, steps_per_leg=1, warmup_steps=1, noise_band=0.1, timeout_s=120.0),
                tmp_path / "slot", small, lambda levers, point, parts: started.append((levers, parts)))
    try:
        baseline = slot.reference([])
        kept = slot.spare.pid
        assert kept is not None and baseline.process.pid != kept and "build" in started[-1][1]
        first = slot.reference(["sdpa_math"])
        assert first.process.pid == kept and slot.spare.process is None and first.process.levers[0].name == "sdpa_math"
        assert set(started[-1][1]) == {"served by a kept worker", "warm-up", "outputs", "profile"}, started[-1]
        second = slot.reference(["channels_last"])  # the stack moved on: the first one's worker is given back, then serves this
        assert second.process is first.process and second.process.pid == kept and "served by a kept worker" in started[-1][1]
        assert slot.reference(["channels_last"]) is second and len(started) == 3  # live: not started again
        setting = slot.reference(["knob:fail=False"])  # a knob changes the build: built, not served
        assert "build" in started[-1][1] and setting.process.pid not in (kept, baseline.process.pid) and not setting.process.keep
        assert slot.spare.pid == kept  # the given-back worker of the channels_last stack waits
        slot.reference(["sdpa_math"])  # the knob's reference retires: closed, not kept
        assert not setting.process.worker.alive and slot.spare.process is None
    finally:
        slot.close()
    assert not baseline.process.worker.alive and slot.spare.process is None
