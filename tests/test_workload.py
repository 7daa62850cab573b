"""The workload as the unit, on the CPU: a small torch model written here, frozen, then timed end to end beside
levers and knobs in worker processes, each candidate gated on the frozen outputs before its speed counts."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from helpers import REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest
from hyperloom.tools.workload.schema import result_schema

torch = pytest.importorskip("torch")

WORKLOAD = '''
import os, signal, time
from typing import Literal
import torch

class Mlp:
    def __init__(self, repeat, scale, die, noisy, sleep_ms, shape_drift):
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
        self.x = torch.randn(256, 256)
        self.repeat, self.scale, self.die, self.noisy, self.sleep_ms = repeat, scale, die, noisy, sleep_ms
        self.shape_drift = _next_run() if shape_drift else 0  # rows kept: one more in each process that builds it
        self.calls = 0

    def step(self):
        if self.die:
            os.kill(os.getpid(), signal.SIGKILL)
        with torch.inference_mode():
            for _ in range(self.repeat):
                self.y = self.model(self.x) * self.scale
        if self.sleep_ms:
            time.sleep(self.sleep_ms / 1e3)
        self.calls += 1

    def outputs(self):
        y = self.y + (int.from_bytes(os.urandom(2), "little") / 65536 if self.noisy else 0.0)  # differs per process, whatever the seed
        if self.shape_drift:
            y = y[: self.shape_drift]
        return {"y": y, "argmax": y.argmax(dim=-1)}

def _next_run():
    import fcntl
    # in the workspace, where the worker runs; locked: the baseline and its float32 twin may build at once
    with open("shape_drift_runs.txt", "a+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        counter.seek(0)
        runs = int(counter.read() or 0) + 1
        counter.seek(0)
        counter.truncate()
        counter.write(str(runs))
    return runs

def build(repeat: int = 2, scale: float = 1.0, die: bool = False, noisy: bool = False, sleep_ms: int = 0, shape_drift: bool = False,
          mode: Literal["eager", "other"] = "eager"):
    torch.set_num_threads(1)
    return Mlp(repeat, scale, die, noisy, sleep_ms, shape_drift)

def plain():
    return lambda: None
'''
FAST = {"pairs": 5, "steps_per_leg": 2, "warmup_steps": 1, "max_baseline_legs": 6, "timeout_s": 120.0}


@pytest.fixture
def mlp(workspace):
    (workspace.root / "mlp.py").write_text(WORKLOAD)
    return workspace


def _freeze(ws, name="mlp", **knobs):
    return workload_freeze(WorkloadFreezeRequest(workload="mlp.py:build", name=name, atol=1e-5, rtol=1e-5, knobs=knobs, timeout_s=120), ws)


def test_a_frozen_workload_gates_its_candidates_and_the_ab_tells_less_work_from_the_same_work(mlp):
    frozen = _freeze(mlp, repeat="4")
    assert frozen.ok and frozen.gated and [o.name for o in frozen.outputs] == ["y", "argmax"]
    assert frozen.declared_knobs["mode"] == ["eager", "other"] and frozen.declared_knobs["repeat"] is None
    assert all(o.spread <= 1 for o in frozen.outputs) and frozen.evidence.tag.value == "MEASURED"
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["knob:repeat=1"], ["knob:repeat=4"], ["knob:scale=2"],
                                                                         ["knob:die=true"], ["knob:repeat=1"]],
                                                 **{**FAST, "pairs": 8, "noise_band": 0.15}), mlp)
    # a band of 15 %: two worker processes doing the same work were measured 6 % apart in 7 of 8 pairs on a loaded
    # machine; the candidates judged faster here do a quarter of the work
    half, same, wrong, dead, again = result.candidates
    assert half.verdict == "FASTER" and half.speedup > 2, half.reason  # a quarter of the work, the same outputs
    assert same.verdict == "NOT_FASTER", same.reason  # the baseline's own knobs: never called faster
    assert wrong.verdict == "REJECTED" and "y" in wrong.reason and wrong.speedup is None  # twice the outputs: no speed counted
    assert dead.verdict == "CRASH" and "SIGKILL" in dead.reason  # a worker killed mid-step is that candidate's verdict
    assert again.verdict == "FASTER", again.reason  # and the session goes on
    saved = json.loads((mlp.root / result.result_json).read_text())
    jsonschema.validate(saved, json.loads((REPO / "validators" / "workload_bench.schema.json").read_text()))
    assert (mlp.root / result.report_md).read_text().count("| knob:") == 5
    assert result.same_work is not None and result.same_work.levers == [] and result.same_work.pairs == 8, result.same_work
    assert result.noise_band >= 0.02 and "Same work (A/A)" in (mlp.root / result.report_md).read_text()
    # no inputs(seed): benched on fixed inputs, and every verdict, the summary and the report say what that leaves open
    assert all(c.inputs_fresh is False and "inputs fixed: memoization not excluded" in c.reason for c in result.candidates)
    assert "memoization not excluded" in result.summary and ("Inputs fixed: memoization not "
                                                             "excluded") in (mlp.root / result.report_md).read_text()


class _Clock:
    """The controller's clock in a test: it moves only when a stand-in worker says its leg took time."""

    def __init__(self):
        self.now_s = 0.0

    def __call__(self):
        return self.now_s


class _Legs:
    """A stand-in for a worker in ab.paired: each time(steps) call moves the controller's clock by the next of its
    step times, and the worker tells the same."""

    pid, info = None, {"has_inputs": False}

    def __init__(self, walls_s, clock):
        self.walls_s, self.calls, self.clock = list(walls_s), 0, clock

    def round_trip_s(self):
        return 0.0

    def time(self, steps, seeds=None, keep_all=True):
        wall = self.walls_s[self.calls % len(self.walls_s)]
        self.calls += 1
        self.clock.now_s += wall * steps
        return {"wall_s": [wall] * steps, "device_s": [], "elapsed_s": wall * steps, "tampered": []}


def test_an_undecided_candidate_gets_more_pairs_and_a_clear_one_does_not(monkeypatch):
    """What the H200 showed (both kernels on the static cache: 1.09x over 6 pairs, 0.993x over 16): a median beyond
    the noise band without a sign test yet gets another round of pairs, up to max_pairs; a clear gain, or a median
    inside the band, is judged at the first look. Each look is judged at ALPHA / looks."""
    from hyperloom.tools.workload import timed
    from hyperloom.tools.workload.ab import ABSettings, judge, paired

    clock = _Clock()
    monkeypatch.setattr(timed, "perf_counter", clock)
    settings = ABSettings(pairs=6, steps_per_leg=1, warmup_steps=1, noise_band=0.05, timeout_s=60.0, max_pairs=18)
    assert settings.looks() == 3 and ABSettings(6, 1, 1, 0.05, 60.0).looks() == 1
    clear = paired(_Legs([1.0], clock), _Legs([0.5], clock), settings)
    assert len(clear.cand_legs) == 6 and clear.cand_legs[0] == pytest.approx(0.5)  # legs apart, 2x: decided at once
    same = paired(_Legs([1.0], clock), _Legs([1.0, 1.01], clock), settings)
    assert len(same.cand_legs) == 6  # a median inside the band: nothing to look at again
    # 4 of 6 pairs 1.25x faster, 2 slower: a median of 1.25 without a sign test, at every look
    base, leaning = _Legs([1.0], clock), _Legs([0.8, 0.8, 1.1, 0.8, 0.8, 1.1], clock)
    undecided = paired(base, leaning, settings)
    assert len(undecided.base_legs) == len(undecided.cand_legs) == 18 and leaning.calls == 18
    verdict = judge([], undecided.base_legs, undecided.cand_legs, None, 0.05, [], [], 0.0, 0.05 / 3)
    assert verdict.verdict == "NOT_FASTER" and "p < 0.0167" in verdict.reason, verdict.reason  # 12/18 pairs: p = 0.12


def test_the_noise_band_widens_to_what_a_same_work_worker_measured():
    from hyperloom.tools.workload.ab import ABSettings, calibrated
    from hyperloom.tools.workload.models import CandidateResult

    settings = ABSettings(pairs=8, steps_per_leg=2, warmup_steps=1, noise_band=0.02, timeout_s=60.0)
    leaning = CandidateResult(levers=[], verdict="FASTER", reason="8/8 pairs", speedup=1.063, pairs=8, candidate_faster=8)
    assert calibrated(settings, leaning).noise_band == pytest.approx(0.063)  # the gap a same-work worker showed, either way
    assert calibrated(settings, leaning.model_copy(update={"speedup": 0.95})).noise_band == pytest.approx(0.05)
    assert calibrated(settings, leaning.model_copy(update={"speedup": 1.01})).noise_band == 0.02  # never narrower than asked
    assert calibrated(settings, CandidateResult(levers=[], verdict="CRASH", reason="died")).noise_band == 0.02


def test_a_slow_step_fills_a_leg_alone_a_short_one_fills_its_leg_with_steps_and_solo_legs_stop_at_their_time_cap():
    from hyperloom.tools.workload.ab import ABSettings, baseline_legs, paced

    settings = ABSettings(pairs=6, steps_per_leg=3, warmup_steps=2, noise_band=0.02, timeout_s=60.0)
    assert paced(settings, 1.17).steps_per_leg == 1 and paced(settings, 0.2).steps_per_leg == 3 and paced(settings, 0.3).steps_per_leg == 2
    # 25 ms of the model's time a leg; no pace, no change
    assert paced(settings, 0.001).steps_per_leg == 25 and paced(settings, 0.0) == settings
    assert paced(settings, 0.008, 0.090).steps_per_leg == 4  # a ResNet's 8 ms step behind 90 ms of host-drawn inputs: 32 ms of model a leg
    assert paced(settings, 0.004, 2.5).steps_per_leg == 1  # inputs that fill the leg's wall time alone: one step
    assert paced(settings, 0.004, 0.5).steps_per_leg == 5  # 2.5 s of wall time with the inputs
    # device time (a GPU): 100 ms of it a leg, as do_bench repeats; a second-long step still one a leg
    assert paced(settings, 0.0086, 0.1, device_timed=True).steps_per_leg == 12 and paced(settings, 0.001, None, True).steps_per_leg == 100
    assert paced(settings, 1.17, 0.0, device_timed=True).steps_per_leg == 1 and paced(settings, 0.2, None, True).steps_per_leg == 3
    assert paced(settings, 1e-6).steps_per_leg == 1000  # at most MAX_STEPS

    class Noisy:  # a reference whose legs never settle: its CI is never met, the cap stops it
        info = {"has_inputs": False}
        clock = 0.0

        def round_trip_s(self):
            return 0.0

        def time(self, steps, seeds=None, keep_all=True):
            Noisy.clock += 1
            return {"wall_s": [0.01 * (1 + Noisy.clock % 7)] * steps, "device_s": [], "elapsed_s": 0.01 * steps, "tampered": []}

    solo = baseline_legs(Noisy(), 1, 0.0001, 1000, max_s=0.0)
    assert len(solo.legs_s) == 6 and solo.figure == "wall" and solo.inputs_step_s is None  # the fewest whose CI is read, then the cap
    assert solo.steps_per_leg == 2  # paced by its first leg (20 ms: two steps fill 25 ms)
    assert len(baseline_legs(Noisy(), 1, 0.0001, 9).legs_s) == 9  # no cap: max_legs


def test_an_identical_candidate_is_not_called_faster_over_many_pairs(mlp):
    _freeze(mlp)
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["knob:mode=eager"]] * 3, **{**FAST, "pairs": 12}), mlp)
    assert [c.verdict for c in result.candidates] == ["NOT_FASTER"] * 3, [c.reason for c in result.candidates]


def test_a_baseline_that_disagrees_with_itself_is_refused_with_its_spread(mlp):
    with pytest.raises(HyperloomError, match=r"disagrees with itself.*y: max \|a - b\|"):
        _freeze(mlp, noisy="true")


def test_outputs_whose_shape_changes_between_runs_are_refused(mlp):
    with pytest.raises(HyperloomError, match="changed names, shapes or dtypes"):
        _freeze(mlp, shape_drift="true")


def test_levers_that_are_unknown_do_not_apply_here_or_name_no_knob_are_refused_before_anything_runs(mlp):
    _freeze(mlp)
    for candidate, message in ((["turbo"], "unknown lever"), (["graph"], "does not apply on this machine"),
                               (["knob:nope=1"], "declares no knob"),
                               (["knob:mode=fast"], "takes eager, other"), (["compile", "compile_max_autotune"], "two compile levers"),
                               (["int8_weight_only", "fp8_weight_only"], "two quantize levers"),
                               (["inductor_coordinate_descent"], "does not apply on this machine"),
                               (["inductor_combo_kernels"], "does not apply on this machine"),
                               (["fuse_projections", "fuse_projections"], "named twice")):
        with pytest.raises(HyperloomError, match=message):
            workload_bench(WorkloadBenchRequest(name="mlp", candidates=[candidate], **FAST), mlp)
    assert not (mlp.root / ".hyperloom/workload/mlp/runs/bench").exists()


def test_a_lever_that_leaves_no_trace_is_a_no_op(mlp):
    _freeze(mlp)
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["sdpa_math"], ["fuse_projections"]], **FAST), mlp)
    no_op, unfused = result.candidates
    assert no_op.verdict == "NO_OP" and "scaled_dot_product_attention" in no_op.reason and no_op.speedup is None
    # a Sequential of two Linears
    assert unfused.verdict == "NO_OP" and "no sibling projections were fused" in unfused.reason, unfused.reason


def test_a_kept_worker_serves_the_a_a_and_the_candidates_unless_fresh_workers_are_asked_for(mlp):
    _freeze(mlp)
    served = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["sdpa_math"], ["sdpa_math"]], **FAST), mlp)
    assert [r.worker_turn for r in (served.same_work, *served.candidates)] == [2, 3, 4]  # the A/A's worker was built beside the baseline
    fresh = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["sdpa_math"], ["sdpa_math"]], fresh_workers=True, **FAST), mlp)
    assert [r.worker_turn for r in (fresh.same_work, *fresh.candidates)] == [1, 1, 1]


def test_torch_compile_is_a_lever_gated_and_timed_on_the_cpu(mlp):
    _freeze(mlp)
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["compile"]], **{**FAST, "timeout_s": 300.0}), mlp)
    (compiled,) = result.candidates
    assert compiled.verdict in ("FASTER", "NOT_FASTER"), compiled.reason
    assert compiled.engagement[0].engaged and "compiled" in compiled.engagement[0].evidence and compiled.pairs == 5
    assert "recompiles or breaks" not in compiled.reason  # compiled once, as it should be


RECOMPILING = '''
from hyperloom.tools.workload.overrides import replace
SEEN = {"calls": 0}
def make(original):
    def forward(self, input):
        SEEN["calls"] += 1  # Python state dynamo guards on: each call compiles the model again
        return original(self, input)
    return forward
replace("torch.nn:GELU.forward", make)
'''


def test_a_candidate_that_makes_the_compiled_model_recompile_says_so(mlp):
    """What the H200 showed (a kernel's call counter guarded by dynamo: the static cache's decode compiled again at
    every step, 0.2-0.28x): the candidate's reason names the graphs compiled in a warmed-up step. A hand-written
    replacement inside compiled code is not counted by the wrapper (that count was the guard), so it is NO_OP with the
    way out: a custom op counting with note_call, as integrate writes."""
    _freeze(mlp)
    (mlp.root / "recompiling.py").write_text(RECOMPILING)
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["compile", "overrides:recompiling.py"]],
                                                 **{**FAST, "timeout_s": 300.0}), mlp)
    (candidate,) = result.candidates
    assert candidate.verdict == "NO_OP" and "only a custom op calling overrides.note_call counts" in candidate.reason, candidate.reason
    assert "graph(s) during a warmed-up step" in candidate.reason and "TORCH_LOGS=recompiles" in candidate.reason, candidate.reason


GUARDED = '''
import torch
SCALE = {"k": 1.0}  # a Python value the compiled forward reads: dynamo guards on it

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x) * SCALE["k"]

class Guarded:
    def __init__(self):
        torch.manual_seed(0)
        self.model, self.x = Scaled(), torch.randn(4, 8)

    def step(self):
        with torch.inference_mode():
            self.y = self.model(self.x)

def build():
    return Guarded()
'''


DRIVER = '''
import json, sys
import torch
from hyperloom.tools.workload.worker import runner
from hyperloom.tools.workload.levers import lever
root, names = sys.argv[1], json.loads(sys.argv[2])
levers = [{"name": item.name, "kind": item.kind, "value": item.value} for item in map(lever, names)]
runner.build({"workload": "guarded.py:build", "kind": "function", "args": [], "root": root, "knobs": {}, "folder": root + "/candidate", "levers": levers})
runner.warmup({"steps": 2})
sys.modules["guarded"].SCALE["k"] = 2.0
runner.time_steps({"steps": 1})
obj = runner.STATE.obj
with torch.inference_mode():
    print(float((obj.y / obj.model.linear(obj.x)).mean()))
'''  # noqa: E501


@pytest.mark.parametrize(("levers", "scale_seen"), [(["compile"], 2.0), (["compile", "skip_guard_eval"], 1.0)])
def test_skip_guard_eval_skips_dynamo_guards_in_the_steps_after_warm_up(workspace, levers, scale_seen):
    """The lever's effect in the worker's own entries (run here in a subprocess of their own): a value the compiled
    forward reads changes after warm-up. With the guards, dynamo compiles again and the step sees the new value; with
    them skipped, the warm-up's graph runs on with the old one (what makes the lever unsafe, and what the gate's check
    of each pair's timed outputs catches). The warm-up itself keeps the guards: it is where the graphs are compiled."""
    (workspace.root / "guarded.py").write_text(GUARDED)
    run = subprocess.run([sys.executable, "-c", DRIVER, str(workspace.root), json.dumps(levers)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert float(run.stdout.split()[-1]) == pytest.approx(scale_seen, rel=1e-4), run.stdout


def test_a_stance_lever_on_an_eager_workload_is_a_no_op_that_says_what_it_needs(mlp):
    _freeze(mlp)
    result = workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["skip_guard_eval"]], **FAST), mlp)
    (no_op,) = result.candidates
    assert no_op.verdict == "NO_OP" and "stack it on a compiled candidate" in no_op.reason, no_op.reason
    with pytest.raises(HyperloomError, match="does not apply on this machine"):
        workload_bench(WorkloadBenchRequest(name="mlp", candidates=[["cudagraph_step_begin"]], **FAST), mlp)


def test_bad_workloads_get_a_clear_error_with_the_next_step(mlp):
    (mlp.root / "broken.py").write_text("raise RuntimeError('no such model')\ndef build():\n    pass\n")
    (mlp.root / "hangs.py").write_text("import time\ndef build():\n    time.sleep(60)\n")
    cases = [("broken.py:build", "no such model"), ("hangs.py:build", "did not finish"), ("mlp.py:missing", "cannot be loaded"),
             ("not a workload", "neither script.py"), ("../outside.py:build", "outside")]
    for workload, message in cases:
        with pytest.raises(HyperloomError, match=message):
            workload_freeze(WorkloadFreezeRequest(workload=workload, name="bad", timeout_s=5), mlp)
    plain = workload_freeze(WorkloadFreezeRequest(workload="mlp.py:plain", name="plain"), mlp)
    assert not plain.gated and "not gated" in plain.summary
    with pytest.raises(HyperloomError, match="frozen already"):
        workload_freeze(WorkloadFreezeRequest(workload="mlp.py:plain", name="plain"), mlp)


def test_a_frozen_output_changed_after_freezing_is_refused(mlp):
    _freeze(mlp)
    reference = next((mlp.root / ".hyperloom/workload/mlp/frozen/y").glob("ref_*.npy"))
    reference.write_bytes(reference.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(HyperloomError, match="changed|modified|sha256"):
        workload_bench(WorkloadBenchRequest(name="mlp", **FAST), mlp)


def test_the_committed_schema_is_the_models():
    committed = json.loads((REPO / "validators" / "workload_bench.schema.json").read_text())
    assert committed == result_schema(), "stale: python -m hyperloom.tools.workload.schema > validators/workload_bench.schema.json"


def test_a_campaign_s_deadline_cuts_a_running_call_and_says_so(mlp):
    """A worker call still running at the deadline (a campaign's, passed as deadline_at) is cut there, not at its own
    timeout: the worker is killed and the failure names the deadline."""
    import time
    from pathlib import Path

    from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess

    target = Target("mlp.py:build", "function", (), {"sleep_ms": "60000"})
    started = time.monotonic()
    with pytest.raises(WorkloadFailure) as caught:
        with WorkloadProcess(target, [], Path(mlp.root) / "cut", mlp, timeout_s=120.0, deadline_at=time.monotonic() + 20.0) as process:
            process.warmup(1)  # a step that sleeps a minute
    assert caught.value.status == "TIMEOUT" and "cut at the campaign's deadline" in caught.value.message
    assert time.monotonic() - started < 50, "cut at the deadline, not at the call's 120 s timeout"


def test_tunableop_s_engagement_reads_the_tuned_gemms_where_torch_no_longer_writes_its_file_on_request():
    """torch 2.11 on the H200 has no torch.cuda.tunable.write_file (the worker RAISED there); it lists what it tuned."""
    from hyperloom.tools.workload.checks.engagement import engagement
    from hyperloom.tools.workload.levers import lever

    [tuned] = engagement([lever("tunableop")], {"tunableop_enabled": True, "tunableop_files": [], "tunableop_results": 12}, {}, {})
    assert tuned.engaged and "12 GEMM(s) tuned" in tuned.evidence
    [idle] = engagement([lever("tunableop")], {"tunableop_enabled": True, "tunableop_results": 0}, {}, {})
    assert not idle.engaged
