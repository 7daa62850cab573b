"""profile running workloads: a small torch model profiled on the CPU in a worker, and every way a workload can fail."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.models import ProfileRequest

pytest.importorskip("torch", reason="profiling a workload needs torch (pip install torch)")

MODEL = '''
import sys
import torch

torch.manual_seed(0)
width = int(sys.argv[1])
model = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.GELU(), torch.nn.LayerNorm(width), torch.nn.Linear(width, 32))
with torch.no_grad():
    y = torch.softmax(model(torch.randn(16, 64)), -1) * 2 + 1
sys.exit(0)  # a script that ends this way finished its step
'''

FACTORY = '''
import torch

calls = []


def setup():
    calls.append("setup")
    weight = torch.randn(128, 128)

    def step():
        calls.append("step")
        return torch.relu(torch.randn(32, 128) @ weight).sum()
    return step
'''

WORKLOAD = '''
import torch


class Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(64))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class Run:
    """workload freeze's contract: step() and outputs()."""

    def __init__(self):
        self.model, self.x, self.y = Norm(), torch.randn(8, 64), None

    def step(self):
        with torch.no_grad():
            self.y = self.model(self.x)

    def outputs(self):
        return {"y": self.y}


def build(width: int = 64):
    return Run()
'''


def _write(workspace, name: str, text: str) -> str:
    (workspace.root / name).write_text(text)
    return name


def test_a_small_model_is_profiled_on_the_cpu_in_a_worker(workspace):
    script = _write(workspace, "model.py", MODEL)
    result = run_profile(ProfileRequest(workload=script, args=["96"], steps=2, warmup_steps=1, name="cpu", plot=False), workspace)
    assert result.tool == "torch.profiler" and not result.gpu and result.steps == 2 and len(result.step_wall_s) == 2
    assert result.evidence.tag.value == "MEASURED" and result.evidence.toolchain["torch"]
    assert any("CPU-only" in f for f in result.findings)
    assert (workspace.root / ".hyperloom/profile/cpu/trace.json").is_file()
    labels = [h.label for h in result.hotspots]
    # argv reached the script
    assert any(label.startswith("aten::addmm [96] float32, [16, 64] float32, [64, 96] float32") for label in labels)
    chains = [c.ops for c in result.fusion]
    assert ["aten::gelu", "aten::layer_norm"] in chains and ["aten::softmax", "aten::mul", "aten::add"] in chains


def test_a_module_function_is_set_up_once_and_called_once_per_step(workspace):
    _write(workspace, "factory.py", FACTORY)
    result = run_profile(ProfileRequest(workload="factory:setup", steps=3, warmup_steps=2, name="fn", plot=False), workspace)
    assert len(result.step_wall_s) == 3
    mm = next(h for h in result.hotspots if h.label.startswith("aten::mm"))
    assert mm.calls == 3 and mm.flops_per_call == 2 * 32 * 128 * 128  # only the recorded steps, not warm-up or set-up


def test_a_workload_factory_is_profiled_through_its_step_with_the_module_integrate_replaces(workspace):
    """The object `workload freeze` takes (step() and outputs()) profiles as it is; the trace's Python stack names the
    forward each op ran in, in the form integrate's replace takes."""
    _write(workspace, "wl.py", WORKLOAD)
    result = run_profile(ProfileRequest(workload="wl:build", steps=2, warmup_steps=1, name="wl", plot=False), workspace)
    assert len(result.step_wall_s) == 2
    rsqrt = next(h for h in result.hotspots if h.label.startswith("aten::rsqrt"))
    assert rsqrt.calls == 2  # step() ran once a step: build() is the set-up, not the step
    assert any(h.module == "wl:Norm.forward" for h in result.handoff), [h.module for h in result.handoff]


class _Exported:
    """Stands in for a profiler whose Chrome export writes `text` as it is (torch's leaves frame names unescaped)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def export_chrome_trace(self, path: str) -> None:
        Path(path).write_text(self.text)


def test_a_trace_with_unescaped_frame_names_is_repaired_into_json(tmp_path):
    """torch's chrome export writes frame names as they are; one holding quotes made the trace unreadable."""
    from hyperloom.tools.profile.capture import export_json

    trace = tmp_path / "trace.json"
    export_json(_Exported('{"traceEvents": [\n  {\n    "ph": "X",\n    "name": """"",\n    "ts": 1\n  },\n'
                          '  {\n    "name": "kept \\"as\\" is",\n    "ts": 2\n  }\n]}\n'), str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    assert [e["name"] for e in events] == ['"""', 'kept "as" is']


@pytest.mark.parametrize(("body", "reason"), [
    ("raise ValueError('bad batch')\n", r"raised ValueError: bad batch at .*broken\.py:1"),
    ("import sys\nsys.exit(3)\n", r"ended its process: the code called sys.exit\(3\)"),
    ("import os\nos.kill(os.getpid(), 9)\n", r"crashed the worker: the worker died with signal SIGKILL"),
    ("x = 1\n", r"ran no torch operator|no GPU kernels and no operators"),
])
def test_a_workload_that_fails_is_a_clear_error(workspace, body, reason):
    _write(workspace, "broken.py", body)
    with pytest.raises(HyperloomError, match=reason) as caught:
        run_profile(ProfileRequest(workload="broken.py", steps=1, warmup_steps=0, plot=False), workspace)
    assert "Next step" in str(caught.value)


def test_a_hanging_workload_is_killed_at_its_timeout_with_its_children(workspace):
    _write(workspace, "hang.py", (
        "import os, pathlib, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "pathlib.Path('pids').write_text(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(300)\n"))
    started = time.monotonic()
    with pytest.raises(HyperloomError, match=r"did not finish within 20 s and was killed.*raise timeout_s"):
        run_profile(ProfileRequest(workload="hang.py", steps=1, warmup_steps=0, timeout_s=20, plot=False), workspace)
    assert time.monotonic() - started < 45
    for pid in map(int, (workspace.root / "pids").read_text().split()):
        assert _gone(pid), f"process {pid} outlived the worker"


def _gone(pid: int) -> bool:
    for _ in range(50):
        status = Path(f"/proc/{pid}/status")
        if not status.exists() or "\nState:\tZ" in status.read_text():
            return True
        time.sleep(0.1)
    return False


def test_bad_workload_names_are_refused_before_anything_runs(workspace):
    _write(workspace, "notes.txt", "hello")
    with pytest.raises(HyperloomError, match="not a Python script"):
        run_profile(ProfileRequest(workload="notes.txt"), workspace)
    with pytest.raises(HyperloomError, match="does not exist"):
        run_profile(ProfileRequest(workload="missing.py"), workspace)
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_profile(ProfileRequest(workload="../elsewhere.py"), workspace)
    with pytest.raises(HyperloomError, match="neither a script path nor 'module:function'"):
        run_profile(ProfileRequest(workload="os:system; rm"), workspace)


def test_a_module_that_does_not_import_is_named(workspace):
    with pytest.raises(HyperloomError, match="cannot be loaded.*No module named 'nowhere'"):
        run_profile(ProfileRequest(workload="nowhere.bench:step", steps=1, warmup_steps=0), workspace)


def test_the_cli_profiles_a_script_with_its_arguments_after_the_options(workspace, capsys):
    from hyperloom.cli.main import main

    script = _write(workspace, "model.py", MODEL)
    assert main(["profile", "--steps", "1", "--warmup-steps", "0", "--name", "cli", "--no-plot", script, "48"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Profile: host CPU") and "aten::addmm [48] float32" in out
    assert main(["profile", "--trace", ".hyperloom/profile/cli/trace.json", "--json", "--no-plot"]) == 0
    assert '"tool": "torch.profiler"' in capsys.readouterr().out
    assert os.path.isfile(workspace.root / ".hyperloom/profile/cli/report.md")


def test_a_trace_written_unchecked_is_repaired_by_its_reader(tmp_path):
    """Proof of work writes its trace unchecked (one decode fewer); the reader repairs an unescaped frame name."""
    from hyperloom.tools.profile.capture import export_json
    from hyperloom.tools.profile.load import read_trace

    trace = tmp_path / "trace.json"
    export_json(_Exported('{"traceEvents": [\n  {\n    "ph": "X", "cat": "cpu_op",\n    "name": """"",\n    "ts": 1, "dur": 2, "pid": 1, '
                          '"tid": 1\n  },\n  {\n    "ph": "X", "cat": "cpu_op",\n    "name": "aten::mm",\n    "ts": 4, "dur": 3, "pid": 1, '
                          '"tid": 1\n  }\n]}\n'),
                str(trace), checked=False)
    with pytest.raises(json.JSONDecodeError):
        json.loads(trace.read_text())
    assert sorted(op.name for op in read_trace(trace, "trace").ops) == ['"""', "aten::mm"]
