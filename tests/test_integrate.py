"""integrate on the CPU: a fusion library kernel (Triton, in its interpreter here) put in place of a small torch
model's RMSNorm.forward inside the workload's worker, its calls counted, the model's outputs gated on the frozen
baseline, and the end-to-end A/B deciding KEEP or REVERT; a wrong kernel REVERTED, one never called NOT_ENGAGED."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload.api import workload_freeze, workload_integrate
from hyperloom.tools.workload.integrate import write_overrides
from hyperloom.tools.workload.models import IntegrateRequest, WorkloadFreezeRequest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

MODEL = '''
import torch

class TinyRMSNorm(torch.nn.Module):
    """As HF's Qwen2RMSNorm computes it."""
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.variance_epsilon = eps
    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(dtype)

class UnusedNorm(TinyRMSNorm):
    pass

class Model:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(64, 64), TinyRMSNorm(64), torch.nn.Linear(64, 64), TinyRMSNorm(64))
        self.x = torch.randn(8, 64)
    def step(self):
        with torch.inference_mode():
            self.y = self.model(self.x)
    def outputs(self):
        return {"y": self.y}

def build():
    torch.set_num_threads(1)
    return Model()
'''
WRONG = '''
def rmsnorm(x, weight, eps=1e-6, params=None):
    return x * weight  # forgets to normalize
'''
FAST = {"pairs": 5, "steps_per_leg": 1, "timeout_s": 300.0}


@pytest.fixture
def frozen(workspace):
    (workspace.root / "wl.py").write_text(MODEL)
    (workspace.root / "wrongnorm").mkdir()
    (workspace.root / "wrongnorm" / "wrongnorm.py").write_text(WRONG)
    workload_freeze(WorkloadFreezeRequest(workload="wl.py:build", name="tiny", atol=1e-5, rtol=1e-5), workspace)
    return workspace


def test_a_library_kernel_in_place_of_a_module_forward_is_engaged_gated_and_ab_timed(frozen):
    result = workload_integrate(IntegrateRequest(name="tiny", kernel="rmsnorm", replace="wl:TinyRMSNorm.forward", **FAST), frozen)
    candidate = result.bench.candidates[0]
    assert result.calls_per_step == 2 and result.wrapper_us_per_call is not None and result.wrapper_us_per_call >= 0, result.summary
    assert all(c.passed for c in candidate.outputs) and candidate.pairs == 5, candidate.reason  # the kernel's outputs matched the model's
    assert result.verdict in ("KEEP", "REVERT") and (result.verdict == "KEEP") == (candidate.verdict == "FASTER")
    overrides = (frozen.root / result.overrides).read_text()
    assert "TARGET = 'wl:TinyRMSNorm.forward'" in overrides and result.kernel_sha256
    # no machine's path: it reproduces elsewhere
    assert str(frozen.root) not in overrides and "shipped_kernels('triton', 'rmsnorm')" in overrides


def test_a_wrong_kernel_is_reverted_with_the_models_first_mismatches(frozen):
    result = workload_integrate(IntegrateRequest(name="tiny", kernel="wrongnorm", adapter="rmsnorm", replace="wl:TinyRMSNorm.forward",
                                                 **FAST), frozen)
    assert result.verdict == "REVERT" and "out of tolerance" in result.summary and "y" in result.summary
    assert str(frozen.root) not in (frozen.root / result.overrides).read_text()  # the workspace kernel found relative to the overrides file
    assert result.bench.candidates[0].speedup is None  # no speed counted for a wrong kernel


def test_a_kernel_the_model_never_calls_is_not_engaged(frozen):
    result = workload_integrate(IntegrateRequest(name="tiny", kernel="rmsnorm", replace="wl:UnusedNorm.forward", **FAST), frozen)
    assert result.verdict == "NOT_ENGAGED" and result.calls_per_step == 0 and "never called" in result.summary


def test_bad_targets_and_adapters_get_a_clear_answer(frozen):
    missing = workload_integrate(IntegrateRequest(name="tiny", kernel="rmsnorm", replace="wl:NoSuchNorm.forward", **FAST), frozen)
    assert missing.verdict == "RAISED" and "NoSuchNorm" in missing.summary  # the worker's error, the session goes on
    with pytest.raises(HyperloomError, match="no adapter puts softmax"):
        workload_integrate(IntegrateRequest(name="tiny", kernel="softmax", replace="wl:TinyRMSNorm.forward"), frozen)
    with pytest.raises(HyperloomError, match="not module:Class.method"):
        workload_integrate(IntegrateRequest(name="tiny", kernel="rmsnorm", replace="TinyRMSNorm"), frozen)
    with pytest.raises(HyperloomError, match="outside"):
        workload_integrate(IntegrateRequest(name="tiny", kernel="../elsewhere", replace="wl:TinyRMSNorm.forward"), frozen)


COMPILED = '''
import sys
import torch
from hyperloom.core.factory import load_file
from hyperloom.tools.workload.worker import overrides
sys.path.insert(0, sys.argv[1])
import wl
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), wl.TinyRMSNorm(64), torch.nn.Linear(64, 64), wl.UnusedNorm(64)).eval()
x = torch.randn(8, 64)
with torch.no_grad():
    reference = model(x)
    wrong = model[2](model[1](model[0](x))) * model[3].weight  # what the wrong kernel makes of the last norm
    for index, path in enumerate(sys.argv[2:]):
        load_file(path, f"overrides_{index}")
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")  # a graph break is an error here
    for _ in range(3):
        out = compiled(x)
from torch._dynamo.utils import counters
print("graphs", counters["stats"]["unique_graphs"])
print("calls", overrides.calls()["wl:TinyRMSNorm.forward"], overrides.calls()["wl:UnusedNorm.forward"])
print("error", float((out - reference).abs().max()))
print("wrong", float((out - wrong).abs().max()))
print("kernels", ",".join(overrides.kernels()["wl:TinyRMSNorm.forward"]))
'''


def test_a_kernel_a_replayed_graph_runs_with_no_host_call_is_engaged_by_its_device_launches():
    """In a CUDA/HIP graph replay (decode_loop's token) no Python runs: the custom op counts nothing. Its declared device
    kernels among the profiled step's kernels are the proof; a declared kernel that did not run proves nothing."""
    from hyperloom.tools.workload.checks.engagement import engagement
    from hyperloom.tools.workload.levers import lever

    seen = {"override_calls": {"wl:TinyRMSNorm.forward": 0, "wl:UnusedNorm.forward": 0},
            "override_kernels": {"wl:TinyRMSNorm.forward": ["_mean_square", "rmsnorm_kernel"], "wl:UnusedNorm.forward": ["other_kernel"]},
            "kernels": {"rmsnorm_kernel": 33, "nvjet_gemv": 64}, "compiled_graphs": 1}
    [said] = engagement([lever("overrides:norm.py")], seen, {}, {})
    assert not said.engaged and "TinyRMSNorm.forward by rmsnorm_kernel x33" in said.evidence and ("never called: "
                                                                                                  "wl:UnusedNorm.forward") in said.evidence
    seen["override_calls"].pop("wl:UnusedNorm.forward")
    [said] = engagement([lever("overrides:norm.py")], seen, {}, {})
    assert said.engaged and "a replayed graph" in said.evidence
    [said] = engagement([lever("overrides:norm.py")], seen, {"kernels": {"rmsnorm_kernel": 33}}, {})  # its reference runs it too
    assert not said.engaged and "never called: wl:TinyRMSNorm.forward" in said.evidence
    seen["kernels"] = {"nvjet_gemv": 64}
    [said] = engagement([lever("overrides:norm.py")], seen, {}, {})
    assert not said.engaged and "never called: wl:TinyRMSNorm.forward" in said.evidence


def test_an_integrated_kernel_is_one_opaque_op_inside_a_compiled_model(frozen):
    """torch.compile(fullgraph=True) of a model whose norms are replaced: no graph break at the launcher's Python, one
    graph for every call (on the H200 a guard on the call count recompiled the static cache's decode at every step:
    0.2-0.28x), the calls counted, the library kernel's output as eager's, and a wrong kernel's output in the compiled
    graph (the op ran, not a trace of the original forward)."""
    folder = frozen.root / ".hyperloom" / "compiled"
    right = write_overrides(folder, "rmsnorm", "wl:TinyRMSNorm.forward", {}, None, frozen)[2]
    wrong = write_overrides(folder, "wrongnorm", "wl:UnusedNorm.forward", {}, "rmsnorm", frozen)[2]
    assert "torch.library.custom_op('hyperloom::rmsnorm_" in right.read_text()
    run = subprocess.run([sys.executable, "-c", COMPILED, str(frozen.root), str(right), str(wrong)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert lines["graphs"] == "1", run.stdout  # compiled once: a count dynamo guarded on would compile again at every call
    assert lines["calls"] == "3 3", run.stdout  # each replaced norm once a compiled call, counted by its op's implementation
    assert float(lines["wrong"]) < 1e-5 < float(lines["error"]), run.stdout  # the compiled graph ran the wrong kernel's x * weight
    assert "rmsnorm_kernel" in lines["kernels"].split(","), run.stdout  # what a replayed graph shows on the device instead of a call
