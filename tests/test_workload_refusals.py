"""A new user's own model and their plausible mistakes (issue 67): a factory's module given without its function, a
misspelled factory, a knob the factory does not take, a step that raises inside torch, torch missing, a misspelled
lever at the start of a campaign. Each is refused with what the user's file defines and the next step, before anything
is built or frozen where the file alone can tell."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.optimize.models import OptimizeRequest
from hyperloom.tools.optimize.one_campaign import run_campaign
from hyperloom.tools.workload.api import workload_freeze
from hyperloom.tools.workload.freeze import describe_target
from hyperloom.tools.workload.models import WorkloadFreezeRequest

# the user's own model, written from the skill's workload page: an nn.Sequential, inputs(seed), step(), outputs(), two knobs
MYMODEL = '''
from typing import Literal

import torch


class MLP(torch.nn.Sequential):
    def __init__(self, width):
        super().__init__(torch.nn.Linear(64, width), torch.nn.GELU(), torch.nn.Linear(width, 64))


class Workload:
    def __init__(self, width, batch):
        torch.manual_seed(0)
        self.model, self.x = MLP(width).eval(), torch.randn(batch, 64)

    def inputs(self, seed):
        self.x.copy_(torch.randn(self.x.shape, generator=torch.Generator().manual_seed(seed)))

    def step(self):
        with torch.inference_mode():
            self.y = self.model(self.x)

    def outputs(self):
        return {"y": self.y}


def build(width: int = 128, batch: Literal[8, 64] = 64):
    torch.set_num_threads(1)
    return Workload(width, batch)
'''

BAD_STEP = '''import torch


class Workload:
    def step(self):
        layer = torch.nn.Linear(8, 8)
        return layer(torch.zeros(4, 3))  # line 7: the user's mistake, raised inside torch's Linear


def build():
    return Workload()
'''

SCRIPT = '''import torch

def helper(x):
    return x * 2

y = helper(torch.ones(4))
'''


@pytest.fixture
def mine(workspace):
    (workspace.root / "mymodel.py").write_text(MYMODEL)
    return workspace


def _nothing_made(workspace, name):
    assert not (workspace.root / ".hyperloom" / "workload" / name).exists(), "refused before anything was frozen or built"


def test_a_factory_s_module_given_without_its_function_is_refused_with_the_factory_it_defines(mine):
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="mymodel.py", name="x"), mine)
    said = str(caught.value)
    assert "did you mean mymodel.py:build?" in said and "defines MLP, Workload, build" in said and ("runs nothing at its top "
                                                                                                    "level") in said, said
    _nothing_made(mine, "x")


def test_a_plain_script_is_still_a_script(mine):
    """The other side of the rule: a file whose top level runs its work is timed as a script, whatever it defines."""
    (mine.root / "script.py").write_text(SCRIPT)
    assert describe_target("script.py", [], {}, mine).kind == "script"


def test_a_misspelled_factory_is_refused_with_the_file_s_callables_and_the_closest(mine):
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="mymodel.py:buidl", name="x"), mine)
    said = str(caught.value)
    assert "cannot be loaded: mymodel.py defines no buidl (did you mean build?); its callables: MLP, Workload, build" in said, said
    assert "pass mymodel.py:build" in said, said
    _nothing_made(mine, "x")


def test_a_misspelled_factory_of_a_module_is_refused_with_its_callables(mine):
    pytest.importorskip("torch")
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="mymodel:buidl", name="x", timeout_s=120), mine)
    said = str(caught.value)
    assert "cannot be loaded" in said and "defines no buidl (did you mean build?); its callables: MLP, Workload, build" in said, said


@pytest.mark.parametrize(("knobs", "said"), [
    ({"batchs": "8"}, "build declares no knob 'batchs' (did you mean batch?); it declares width, batch"),
    ({"batch": "16"}, "knob batch takes one of 8, 64, not '16'"),
    ({"width": "wide"}, "knob width takes an int, not 'wide'"),
])
def test_a_knob_the_factory_does_not_take_is_refused_before_anything_is_built(mine, knobs, said):
    started = time.monotonic()
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="mymodel.py:build", name="x", knobs=knobs), mine)
    assert said in str(caught.value), str(caught.value)
    assert time.monotonic() - started < 2.0, "no worker was started"
    _nothing_made(mine, "x")


def test_a_step_that_raises_names_the_user_s_line_and_the_command_that_runs_it_alone(workspace):
    pytest.importorskip("torch")
    (workspace.root / "bad_step.py").write_text(BAD_STEP)
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="bad_step.py:build", name="bad", timeout_s=120), workspace)
    said = str(caught.value)
    assert "at bad_step.py:7 (raised in torch/nn/modules/linear.py:" in said, said
    command = said.split("run it alone in the workspace root: ", 1)[1].rstrip(".")
    assert " -c " in command and 'run_once("bad_step.py:build")' in command, command
    ran = subprocess.run(command, shell=True, cwd=workspace.root, capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 1 and 'bad_step.py", line 7, in step' in ran.stderr and ("mat1 and mat2 shapes cannot be "
                                                                                      "multiplied") in ran.stderr, ran.stderr


def test_the_command_that_runs_a_workload_alone_runs_a_good_one_with_its_knobs(mine):
    pytest.importorskip("torch")
    from hyperloom.tools.workload.alone import alone_command

    command = alone_command("mymodel.py:build", {"batch": "8"})
    ran = subprocess.run(command, shell=True, cwd=mine.root, capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0 and "mymodel.py:build: built, inputs(0), step() and outputs() ran" in ran.stderr, ran.stderr


def test_a_workload_without_torch_is_told_how_to_install_a_cpu_wheel(workspace):
    (workspace.root / "needs_torch.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')  # as `import torch` raises where torch is not installed\n"
        "def build():\n    pass\n")
    with pytest.raises(HyperloomError) as caught:
        workload_freeze(WorkloadFreezeRequest(workload="needs_torch.py:build", name="t", timeout_s=120), workspace)
    said = str(caught.value)
    assert f"imports torch, which this Python ({sys.executable}) does not have" in said, said
    assert "pip install torch==2.13.0 (a CPU wheel)" in said and "--index-url https://download.pytorch.org/whl/cpu" in said, said
    assert "check the module path" not in said


def test_a_missing_module_other_than_torch_is_named_with_its_package():
    from hyperloom.tools.workload.freeze import install_hint

    assert "pip install einops" in install_hint("einops.layers")


def test_a_campaign_with_a_misspelled_lever_is_refused_before_anything_is_frozen(mine):
    started = time.monotonic()
    with pytest.raises(HyperloomError, match=r"unknown lever 'compil' \(did you mean compile\?\)"):
        run_campaign(OptimizeRequest(workload="mymodel.py:build", levers=["compil"]), mine)
    assert time.monotonic() - started < 2.0
    _nothing_made(mine, "mymodel.py_build")
    assert not (mine.root / ".hyperloom" / "optimize").exists() or not any((mine.root / ".hyperloom" / "optimize").iterdir())


def test_a_campaign_with_a_lever_of_another_vendor_leaves_no_campaign_session(mine):
    pytest.importorskip("torch")
    with pytest.raises(HyperloomError, match="does not apply on this machine"):
        run_campaign(OptimizeRequest(workload="mymodel.py:build", session="m", levers=["graph"], timeout_s=120), mine)
    assert not (mine.root / ".hyperloom" / "optimize" / "m").exists(), "no half-made session ('not running, phase baseline')"


def test_a_contract_refusal_raised_in_hyperloom_s_own_code_points_at_no_line_of_ours():
    """'an output of dtype <U2 cannot be gated ... at .../runner.py:494': the refusal names its cause; a line of ours
    beside it sent the user into our code. A refusal raised where the user's code is on the stack still names their line."""
    from hyperloom.core.worker_main import call_entry

    report = call_entry("hyperloom.tools.workload.worker.runner:serve", {})  # no kept workload: refused in runner.py alone
    assert report["error_type"] == "WorkloadContractError" and report["where"] == "", report
