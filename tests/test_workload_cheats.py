"""The workload gate against a corpus of cheats (tests/fixtures/workload_cheats/, one overrides module each, its
docstring naming the trick): none is called FASTER, each is stopped by the defence its trick meets, and an honest
replacement and a genuinely faster knob are still judged."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from time import sleep
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, write_roofline
from hyperloom.core.evidence import host_device
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload import timed
from hyperloom.tools.workload.checks import clock_checks
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest

torch = pytest.importorskip("torch")

CORPUS = REPO / "tests" / "fixtures" / "workload_cheats"
FAST = {"pairs": 5, "steps_per_leg": 2, "warmup_steps": 1, "max_baseline_legs": 6, "timeout_s": 120.0}
TIMED = "outputs of timed step"
WORK = "proof of work"
CHEATS = {  # overrides module -> (verdict, what the reason names); NOT_FASTER where the defence is that the work is timed
    "memo_input_hash": ("NOT_FASTER", ""),
    "first_result_forever": ("REJECTED", WORK),
    "background_thread": ("REJECTED", WORK),  # on a CPU the profiler records no op of a thread the step started (a GPU sees its kernels)
    "honest_off_the_clock": ("REJECTED", TIMED),
    "cache_after_warmup": ("REJECTED", TIMED),
    "frozen_references": ("REJECTED", WORK),
    "work_in_outputs": ("NOT_FASTER", ""),
    "quarter_clock": ("REJECTED", "time.perf_counter"),
    "runner_timer": ("REJECTED", "runner.timed_window"),
    "code_swap_clock": ("REJECTED", "runner.time_steps"),  # its code swapped in place: the tamper check compares code objects too
    "burn_during_baseline": ("NOT_FASTER", ""),
    "thread_burn": (("NOT_FASTER", "REJECTED"), ""),  # its thread slows its own inputs(seed) too: work moved, by the clock
    "seeds_read_ahead": ("REJECTED", WORK),  # the profiled step alone, its inputs drawn before: the lookups it left did no matmul
    "work_in_inputs": ("REJECTED", WORK),  # and behind it, the trace of what inputs(seed) runs (tests/test_workload_window.py)
    "lazy_ungated": ("REJECTED", "outputs of"),
    "ignore_seed": ("REJECTED", WORK),
    "child_ahead": ("REJECTED", WORK),
    "saver_copies_reference": ("REJECTED", "runner._save"),
    "zeros": ("REJECTED", "outputs out of tolerance"),
    "late_swap": ("REJECTED", "runner.STATE.step"),
    "profiler_aware": ("REJECTED", TIMED),
    "forged_work": ("REJECTED", "profiled_step.profiled"),
    "work_in_saver": ("REJECTED", "numpy.lib.format.write_array"),
}


@pytest.fixture
def seeded(workspace):
    shutil.copy(CORPUS / "workload" / "seeded.py", workspace.root / "seeded.py")
    shutil.copytree(CORPUS, workspace.root / "cheats", ignore=shutil.ignore_patterns("workload", "__pycache__"))
    workload_freeze(WorkloadFreezeRequest(workload="seeded.py:build", name="seeded", atol=1e-5, rtol=1e-5, timeout_s=120), workspace)
    return workspace


def test_the_corpus_holds_every_cheat_the_test_expects_and_each_names_its_trick():
    modules = {path.stem for path in CORPUS.glob("*.py")} - {"honest_gelu"}
    assert modules == set(CHEATS), modules ^ set(CHEATS)
    assert all(len((CORPUS / f"{name}.py").read_text().split('"""')[1]) > 60 for name in CHEATS)


def test_no_cheat_is_faster_each_meets_its_defence_and_honest_candidates_are_still_judged(seeded):
    candidates = [[f"overrides:cheats/{name}.py"] for name in CHEATS] + [["overrides:cheats/honest_gelu.py"], ["knob:redundant=0"],
                                                                         ["compile"]]
    result = workload_bench(WorkloadBenchRequest(name="seeded", candidates=candidates, **FAST), seeded)
    *cheats, honest, fast, compiled = result.candidates
    said = {name: (c.verdict, c.reason) for name, c in zip(CHEATS, cheats, strict=True)}
    wrong = {name: said[name] for name, (verdict, reason) in CHEATS.items()
                                        if said[name][0] not in (verdict if isinstance(verdict, tuple) else (verdict,))
             or reason not in said[name][1]}
    assert not wrong, "\n".join(f"{name}: {verdict} {reason[:240]}" for name, (verdict, reason) in wrong.items())
    assert all(c.inputs_fresh for c in [result.same_work, *result.candidates]) and "memoization not excluded" not in result.summary
    assert honest.verdict in ("NOT_FASTER", "FASTER") and honest.pairs == 5, honest.reason
    assert fast.verdict == "FASTER" and fast.speedup > 1.5, fast.reason  # a third of the work, the same outputs on every seed
    assert honest.work.compute().flops == result.baseline_work.compute().flops, honest.work  # an overrides module proves its work
    assert compiled.verdict in ("NOT_FASTER", "FASTER") and compiled.work is None, compiled.reason  # the catalog's compile: engagement only
    assert result.roof.roof_s is None and any("no roof: no ceiling known for this CPU" in w
                                              for w in result.warnings), (result.roof, result.warnings)
    timed = [c for c in result.candidates if c.pairs]
    assert (all(c.gate_s is not None and c.trial_s > c.gate_s for c in result.candidates)
            and all(c.gate_s > 0 for c in timed)), [(c.levers, c.gate_s, c.trial_s) for c in timed]


FIXED = '''

class Fixed(Seeded):
    inputs = None  # no inputs(seed): its inputs are fixed, so a memo's outputs are right


def build_fixed(redundant: int = 2) -> Fixed:
    torch.set_num_threads(1)
    return Fixed(redundant)
'''


def test_on_fixed_inputs_a_memo_fails_proof_of_work_and_a_profiler_aware_one_is_impossible_under_a_measured_roof(workspace):
    """Where the outputs cannot tell: the memo's profiled step did no matmul; the cheat that works while profiled is timed
    under the roof of ceilings injected as a roofline result. The step is 21 forwards (1.4 GFLOP, one thread) and the
    fp32 ceiling 0.4 TFLOP/s, twice a core's peak: the roof (0.5 x 3.5 ms) sits 4x under an honest step on the fastest
    core and 3x over the cost of a call that does no work (about 0.6 ms a step on the 2-core host this was written on)."""
    (workspace.root / "seeded.py").write_text((CORPUS / "workload" / "seeded.py").read_text() + FIXED)
    shutil.copytree(CORPUS, workspace.root / "cheats", ignore=shutil.ignore_patterns("workload", "__pycache__"))
    write_roofline(workspace, host_device(), fma_tflops=0.4, memory_gbps=200.0)
    workload_freeze(WorkloadFreezeRequest(workload="seeded.py:build_fixed", name="fixed", knobs={"redundant": "20"}, atol=1e-5, rtol=1e-5,
                                          timeout_s=120),
                    workspace)
    candidates = [["overrides:cheats/memo_input_hash.py"], ["overrides:cheats/profiler_aware.py"], ["overrides:cheats/honest_gelu.py"]]
    result = workload_bench(WorkloadBenchRequest(name="fixed", candidates=candidates, **FAST), workspace)
    memo, aware, honest = result.candidates
    assert result.roof.roof_s is not None and result.roof.tag == "MEASURED", result.roof
    assert memo.verdict == "REJECTED" and "proof of work" in memo.reason and "0 ops against 42" in memo.reason, memo.reason
    assert aware.verdict == "IMPOSSIBLE" and "under the baseline step's roof" in aware.reason and "(MEASURED)" in aware.reason, aware.reason
    assert honest.verdict in ("NOT_FASTER", "FASTER") and honest.pairs == 5, honest.reason
    assert "IMPOSSIBLE" in (workspace.root / result.report_md).read_text()


SHAPES = '''
import torch

class Ragged:
    def __init__(self):
        self.x = torch.ones(4, 8)
    def inputs(self, seed):
        self.x = torch.ones(4 + seed % 3 + 1, 8)  # the seed picks a size: outputs no longer line up with the frozen ones
    def step(self):
        self.y = self.x * 2
    def outputs(self):
        return {"y": self.y}

def build():
    return Ragged()
'''


def test_a_workload_whose_outputs_change_shape_with_the_seed_is_refused_with_the_shapes(workspace):
    (workspace.root / "ragged.py").write_text(SHAPES)
    # no `model`: a tolerance declared
    workload_freeze(WorkloadFreezeRequest(workload="ragged.py:build", name="ragged", atol=1e-6, timeout_s=120), workspace)
    with pytest.raises(HyperloomError, match=r"changed shape with the inputs of seed \d+: y \[\d, 8\], frozen \[4, 8\]"):
        workload_bench(WorkloadBenchRequest(name="ragged", **FAST), workspace)


EOS = '''
import numpy as np

class Generate:
    """A greedy generate of 4 prompt tokens that stops at its end-of-sequence token after 2 to 5 tokens, as the seed's
    prompt leads it (a random-weight decoder's `generate` did on the H200)."""
    seed = 0
    def inputs(self, seed):
        self.seed = seed
    def step(self):
        rng = np.random.default_rng(self.seed)
        steps = 2 + self.seed % 4
        self.tokens = np.concatenate([rng.integers(0, 50, (1, 4)), rng.integers(0, 50, (1, steps))], axis=1)
        self.ids = np.repeat(self.tokens[:, 4:, None], 2, axis=2) + np.array([0, 1])
        self.logprobs = np.broadcast_to(np.array([-0.1, -3.0], dtype=np.float32), self.ids.shape).copy()
    def outputs(self):
        return {"tokens": self.tokens, "tokens.top_ids": self.ids, "tokens.top_logprobs": self.logprobs}

def build():
    return Generate()
'''


def test_generated_tokens_may_stop_at_their_end_of_sequence_with_the_seed_and_the_prompt_may_not_move():
    from hyperloom.tools.workload.ab import same_shapes

    frozen = {"tokens": np.zeros((1, 36)), "tokens.top_ids": np.zeros((1, 32, 8)), "tokens.top_logprobs": np.zeros((1, 32, 8)),
              "tokens.teacher": np.zeros((1, 32, 100)), "pooled": np.zeros((1, 4))}
    stopped = {"tokens": np.zeros((1, 9)), "tokens.top_ids": np.zeros((1, 5, 8)), "tokens.top_logprobs": np.zeros((1, 5, 8)),
               "tokens.teacher": np.zeros((1, 5, 100)), "pooled": np.zeros((1, 4))}
    same_shapes(stopped, frozen, 1)
    for name, shape, said in (("tokens", (1, 10), r"tokens \[1, 10\], frozen \[1, 36\]"),  # the prompt grew by one
                              ("tokens.top_ids", (1, 5, 4), r"tokens.top_ids \[1, 5, 4\]"),  # k changed
                              ("pooled", (2, 4), r"pooled \[2, 4\]")):
        with pytest.raises(HyperloomError, match=said):
            same_shapes({**stopped, name: np.zeros(shape)}, frozen, 1)


def test_a_generate_that_stops_at_its_end_of_sequence_is_benched_on_fresh_seeds(workspace):
    (workspace.root / "eos.py").write_text(EOS)
    workload_freeze(WorkloadFreezeRequest(workload="eos.py:build", name="eos", atol=0.01, timeout_s=120), workspace)
    result = workload_bench(WorkloadBenchRequest(name="eos", **FAST), workspace)
    assert result.ok and result.baseline.median_s > 0, result.summary


ESCAPES = '''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
time.sleep(60)
'''


class _Process:
    def __init__(self, pid):
        self.pid = pid


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _children(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(int(p.name)) == pid]


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="walks /proc")
def test_the_other_worker_is_stopped_with_a_child_that_left_its_session_and_continued_after():
    worker = subprocess.Popen([sys.executable, "-c", ESCAPES], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not _children(worker.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        (child,) = _children(worker.pid)
        assert os.getsid(child) != os.getsid(worker.pid)  # the child left the worker's session and group
        with timed.stopped(_Process(worker.pid)):
            assert _state(worker.pid) == "T" and _state(child) == "T"
        assert _state(worker.pid) != "T" and _state(child) != "T"
        with pytest.raises(RuntimeError), timed.stopped(_Process(worker.pid)):
            raise RuntimeError("a leg that fails")
        assert _state(worker.pid) != "T"  # continued whatever happened in the leg
    finally:
        for pid in _children(worker.pid):
            os.kill(pid, signal.SIGKILL)
        worker.kill()
        worker.wait()


def _leg(step_s: float, controller_s: float, inputs_s: float = 0.0, device: list[float] | None = None, steps: int = 1) -> timed.Leg:
    """A leg of `steps` windows of `step_s` each (and `inputs_s` of inputs(seed) each) that the controller timed at `controller_s`."""
    return timed.Leg(step_s=step_s, figure="wall", controller_s=controller_s, worker_s=steps * (step_s + inputs_s),
                     window_s=[step_s] * steps, device_s=device or [], inputs_s=[inputs_s] * steps if inputs_s else [],
                     step_only_s=[step_s] * steps, digests=[], tampered=[], seeds=None)


@pytest.mark.parametrize(("claimed_s", "reference_unaccounted_s", "lied"), [
    (0.25, None, True), (0.7, None, True), (0.9, None, False), (1.0, None, False),  # a 1 s call: 0.75, 0.3, 0.1, 0 s unaccounted
    (0.5, 0.2, True), (0.75, 0.2, False),  # beside a reference that left 0.2 s of its call unaccounted
    (0.05, 0.9, False)])  # a tenth of its step unaccounted beyond a reference that left 0.9 s: within half the reference's own
def test_a_worker_whose_windows_leave_far_more_of_the_call_unaccounted_than_the_reference_s_is_called_a_liar(claimed_s,
                                                                                                             reference_unaccounted_s, lied):
    """What a call costs beyond its windows and inputs is the harness's, the same in both workers: a candidate's windows
    that leave more of the controller's clock unexplained than the reference's, by a quarter of what it claims, lied."""
    reference = [_leg(1.0 - reference_unaccounted_s, 1.0)] * 5 if reference_unaccounted_s is not None else None
    said = clock_checks.disagreement([_leg(claimed_s, 1.0)] * 5, reference)
    assert (said is not None) == lied and (not lied or "disagrees with the controller's" in said), said


def test_legs_too_short_for_the_call_s_own_cost_are_not_called_lies_and_inputs_are_accounted():
    """A 0.2 ms leg the worker accounts 0.05 ms of, a 4 ms leg it accounts 1 ms of: within what a call costs beyond its
    account on a loaded host (CLOCK_SLACK_S a leg). A leg that spent 90 ms of its call in inputs(seed) and 10 ms in its
    window accounted for all of it; one that claims a quarter of that window did not."""
    assert clock_checks.disagreement([_leg(0.05e-3, 0.2e-3)] * 5) is None
    assert clock_checks.disagreement([_leg(1e-3, 4e-3)] * 5) is None
    assert clock_checks.disagreement([_leg(2.5e-3, 10e-3)] * 5) is not None  # a quarter of 10 ms legs: 7.5 ms a leg unaccounted for
    assert clock_checks.disagreement([_leg(10e-3, 3 * 100.5e-3, inputs_s=90e-3, steps=3)] * 5) is None
    # claims 2.5 ms of its 10 ms windows
    assert clock_checks.disagreement([_leg(2.5e-3, 3 * 100.5e-3, inputs_s=90e-3, steps=3)] * 5) is not None


def test_inputs_that_take_longer_in_the_candidate_s_worker_than_the_reference_s_on_the_same_seeds_are_work_moved():
    """The step's work done in a wrapper of what inputs(seed) calls shows as inputs time the reference's worker did not
    take on the same seeds; a host draw's own noise (1 ms apart either way) and another process's pace (12 % slower at
    the same draw, seen on a loaded 2-core CPU) do not."""
    reference = [_leg(8e-3, 0.3, inputs_s=10e-3 + d) for d in (0.0, 1e-3, -1e-3, 0.5e-3, -0.5e-3, 0.2e-3)]
    noisy = [_leg(4e-3, 0.3, inputs_s=11.2e-3 + d) for d in (1e-3, -1e-3, 0.0, -0.5e-3, 0.5e-3, 0.1e-3)]
    assert clock_checks.inputs_moved(noisy, reference, 0.02) is None
    moved = [_leg(1e-3, 0.3, inputs_s=17e-3 + d) for d in (1e-3, -1e-3, 0.0, -0.5e-3, 0.5e-3, 0.1e-3)]
    said = clock_checks.inputs_moved(moved, reference, 0.02)
    assert said is not None and "its inputs(seed) took 17" in said and "against the reference's 10.1 ms" in said, said
    assert clock_checks.inputs_moved(moved, [_leg(8e-3, 0.3)] * 6, 0.02) is None  # fixed inputs: nothing drawn, nothing compared


@pytest.mark.parametrize(("paired", "solo", "flagged"), [([1.6, 1.7, 1.6], 1.0, True), ([1.4, 1.49, 1.5], 1.0, True),
                                                           ([1.1, 1.2, 1.25], 1.0, False), ([2.0], None, False)])
def test_a_reference_far_slower_beside_the_candidate_than_alone_is_flagged(paired, solo, flagged):
    assert (clock_checks.slowed(paired, solo) is not None) == flagged


def test_a_speedup_plotted_outside_its_interval_draws_no_negative_bar(tmp_path):
    """A bench raised in matplotlib ('xerr' must not contain negative values) when a figure sat outside its interval."""
    pytest.importorskip("matplotlib")
    from hyperloom.tools.workload.plot import Bar, speedup_bars

    assert speedup_bars([Bar("outside", 2.0, [2.5, 3.5], "gray")], "a figure below its interval", "x", tmp_path / "bars.png") is not None


def test_a_candidate_faster_only_beside_a_slowed_reference_is_not_faster():
    """Beside a reference slowed to 1.5x its solo pace, a candidate at the baseline's own pace reads 1.5x: judged against
    the solo pace it gains nothing. One at twice the solo pace keeps its FASTER."""
    from hyperloom.tools.workload.ab import held_alone, judge

    solo = 10e-3
    matched = judge(["x"], [15e-3] * 6, [10e-3] * 6, None, 0.02, [], [], 0.0)
    assert matched.verdict == "FASTER" and matched.speedup == pytest.approx(1.5)
    held = held_alone(matched, solo, 0.02)
    assert held.verdict == "NOT_FASTER" and held.reason.startswith("faster only beside a slowed reference: "
                                                                   "1x") and held.speedup == matched.speedup
    faster = judge(["x"], [15e-3] * 6, [5e-3] * 6, None, 0.02, [], [], 0.0)
    stands = held_alone(faster, solo, 0.02)  # 3x beside the slowed reference, 2x against its solo pace: FASTER at 2x
    assert stands.verdict == "FASTER" and stands.speedup == pytest.approx(2.0) and stands.reason.startswith("2x against the reference's "
                                                                                                            "solo pace (the pairs read 3x")
    # its interval moved with it
    assert stands.speedup_ci95 is not None and stands.speedup_ci95[0] <= stands.speedup <= stands.speedup_ci95[1]
    slower = judge(["x"], [15e-3] * 6, [20e-3] * 6, None, 0.02, [], [], 0.0)
    assert held_alone(slower, solo, 0.02) == slower  # only a FASTER is reconsidered


def test_a_slowed_reference_says_its_device_time_so_the_host_s_share_shows():
    """On the H200 a conv net's eager reference ran 11.4 ms legs beside one candidate and 7.7 ms alone; whether the
    device or the host took the extra time was not recorded."""
    said = clock_checks.slowed([11.4e-3, 11.5e-3, 11.2e-3], 7.7e-3, 7.2e-3)
    assert said is not None and "its device time 7.2 ms a step in the pairs" in said and "11.4 ms a step" in said
    from hyperloom.tools.workload.ab import Paired

    run = Paired(reference=[_leg(11e-3, 11e-3, device=[7.1e-3, 7.3e-3]), _leg(11e-3, 11e-3, device=[7.2e-3])])  # device read as recorded
    assert run.base_device == pytest.approx(7.2e-3) and Paired().base_device is None


def test_a_leg_s_outputs_are_copied_and_written_off_its_clock_for_the_drawn_step_and_the_writer_s_tamper_report_is_kept(tmp_path):
    """Copying and writing a step's outputs is Hyperloom's work: on the H200 a BERT encoder's 12.6 MB of hidden states
    written inside the clock read as its reference slowed 1.6-1.8x beside each candidate. The step saved is the one the
    controller drew (the last where the leg kept only the last); what the writer's call reports as tampered still
    refuses the leg. The figure is the windows' mean, whatever the call cost around them."""

    class Worker:
        pid = None
        saved: list[int | None] = []

        def round_trip_s(self):
            return 0.0

        def time(self, steps, seeds=None, keep_all=True):
            sleep(0.01 * steps)
            return {"wall_s": [0.01] * steps, "inputs_s": [0.002] * steps, "tampered": []}

        def save_timed(self, folder, step=None):
            self.saved.append(step)
            sleep(0.2)
            return {"outputs": {}, "tampered": ["numpy.lib.format.write_array"]}

    leg = timed.leg(Worker(), 3, None, tmp_path / "out", gated=1)
    assert leg.step_s == pytest.approx(0.01) and leg.figure == "wall" and 0.03 <= leg.controller_s < 0.2, leg
    assert leg.tampered == ["numpy.lib.format.write_array"] and leg.saved_step == 1 and leg.inputs_step_s == pytest.approx(0.002)
    assert timed.leg(Worker(), 3, None, tmp_path / "out", gated=1, keep_all=False).saved_step == 2
    assert timed.leg(Worker(), 2, None, None).tampered == [] and Worker.saved == [1, 2]


@pytest.mark.parametrize(("windows_ms", "device_ms", "figure"), [
    ([8.02, 8.03], [8.0, 8.0], "device"),  # a synchronize's wake-up beyond the last event: device time stands
    ([1.05, 1.06], [1.0, 1.0], "device"),  # 50-60 us a step: within WALL_SLACK_S
    ([12.0, 12.0], [4.0, 4.0], "the wall clock"),  # work on a stream the events do not cover: the device-wide synchronize waited for it
    ([8.0, 8.0], [], "wall")])  # a CPU: the window's wall clock
def test_a_leg_s_figure_is_device_time_unless_the_wall_clock_stands_well_above_it(windows_ms, device_ms, figure):
    step_s, said = timed.figure_of([w / 1e3 for w in windows_ms], [d / 1e3 for d in device_ms])
    assert said.startswith(figure), said
    expected = windows_ms if figure != "device" else device_ms
    assert step_s == pytest.approx(sum(expected) / len(expected) / 1e3)


@pytest.mark.parametrize(("legs_ms", "flagged"), [
    ([7.3, 7.1, 7.5, 7.3, 3.5, 3.6, 3.7, 7.6, 7.7, 7.6, 7.8, 7.8], True),  # the H200's compile at turn 4 (run 6)
    ([4.1, 3.6, 3.9, 3.7, 4.1, 3.9], False),  # a steady candidate, its first leg a little slow
    ([3.5, 3.6, 3.6, 9.0], False),  # one slow leg is an outlier, not a second pace
    ([3.5, 3.6, 3.7], False)])
def test_a_candidate_whose_legs_ran_at_two_paces_is_named(legs_ms, flagged):
    said = clock_checks.two_paced([ms / 1e3 for ms in legs_ms])
    assert (said is not None) == flagged, said
    assert said is None or "two paces: 3 legs near 3.6 ms a step, 9 near 7.6 ms" in said, said


class _Work:
    def step(self):
        return None


def test_the_tamper_check_names_a_replaced_timer_and_a_rebound_step_and_nothing_else(monkeypatch):
    from hyperloom.tools.workload.worker import runner, tamper

    work = _Work()
    before, bound = tamper.snapshot(), tamper.methods(work)
    # a bound method is made anew at each access
    assert tamper.changed(before, tamper.snapshot()) == [] and tamper.changed(bound, tamper.methods(work)) == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(runner, "_save", lambda folder, arrays: {})
    monkeypatch.setattr(runner.time_steps, "__code__", (lambda payload: {}).__code__)  # the same object, other code
    work.step = lambda: None
    assert tamper.changed(before, tamper.snapshot()) == ["time.perf_counter", "hyperloom.tools.workload.worker.runner.time_steps",
                                                         "hyperloom.tools.workload.worker.runner._save"]
    assert tamper.changed(bound, tamper.methods(work)) == ["workload.step"]


DIES_MID_LEG = """
import os, signal, sys, time
from hyperloom.tools.workload import timed

class Worker:
    pid = int(sys.argv[1])

with timed.stopped(Worker()):
    os.kill(os.getpid(), signal.SIGKILL)  # the controller dies mid-leg: its finally never runs
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="walks /proc")
def test_a_worker_stopped_by_a_controller_that_dies_mid_leg_is_continued():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        controller = subprocess.run([sys.executable, "-c", DIES_MID_LEG, str(worker.pid)], capture_output=True, timeout=60)
        assert controller.returncode == -signal.SIGKILL, controller.stderr.decode()[-2000:]
        deadline = time.monotonic() + 10
        while _state(worker.pid) == "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(worker.pid) != "T"  # the guardian continued it when the controller's pipe closed
    finally:
        worker.kill()
        worker.wait()


def test_an_a_a_is_disturbed_by_a_slowed_reference_or_legs_at_two_paces_on_either_side():
    from hyperloom.tools.workload.ab import disturbed
    from hyperloom.tools.workload.models import CandidateResult

    def aa(base, cand):
        return CandidateResult(levers=[], verdict="NOT_FASTER", reason="", speedup=1.0, baseline_legs_s=base, candidate_legs_s=cand)

    steady = [0.010, 0.0101, 0.0099, 0.0100, 0.0102, 0.0098]
    assert disturbed(aa(steady, steady), 0.010) is None and disturbed(aa(steady, steady), None) is None
    assert "1.50x its solo pace" in disturbed(aa([0.015] * 6, steady), 0.010)
    assert "two paces" in disturbed(aa([0.010] * 3 + [0.030] * 3, steady), None)  # a stack's A/A: no solo pace to compare
    assert "two paces" in disturbed(aa(steady, [0.010] * 3 + [0.030] * 3), 0.010)
