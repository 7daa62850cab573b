"""spec_check: every shipped spec is clean; every defect in a corpus of broken specs is found with its field path."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time

import pytest
import yaml

from helpers import REPO
from hyperloom.core.workspace import Workspace
from hyperloom.tools.spec.models import SpecCheckRequest
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.kernelspec.schema import kernel_spec_schema
from hyperloom.validators.schemas import schema_errors

SHIPPED = sorted((REPO / "kernels").rglob("kernel.yaml"))
EXAMPLE = REPO / "kernels" / "examples" / "rmsnorm"


def test_the_committed_schema_is_the_one_the_models_generate():
    committed = json.loads((REPO / "validators" / "kernel_spec.schema.json").read_text())
    assert committed == kernel_spec_schema(), "the spec models changed: run `hyperloom spec schema > validators/kernel_spec.schema.json`"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO / "kernels").parent))
def test_every_shipped_spec_follows_the_schema_and_checks_clean(path):
    assert schema_errors("kernel_spec", yaml.safe_load(path.read_text())) == []
    if yaml.safe_load(path.read_text())["language"] == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("a Triton spec is checked by reading its kernel file, which needs triton (pip install 'hyperloom[triton]')")
    started = time.perf_counter()
    result = run_spec_check(SpecCheckRequest(spec=str(path.relative_to(REPO))), Workspace.at(REPO))
    assert result.ok, [p for p in result.problems if p.severity != "warning"]
    assert result.reference is not None and time.perf_counter() - started < 10


@pytest.fixture
def example(workspace):
    shutil.copytree(EXAMPLE, workspace.root / "k")
    return workspace


def _edit(workspace: Workspace, change) -> None:
    path = workspace.root / "k" / "kernel.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _reference(workspace: Workspace, body: str) -> None:
    (workspace.root / "k" / "reference.py").write_text("import numpy as np\nimport sys, time\n\n\ndef rmsnorm(inputs, shape):\n" + body)


def check(workspace: Workspace, **request):
    return run_spec_check(SpecCheckRequest(spec="k", timeout_s=5, **request), workspace)


BROKEN = {
    "an unknown field": (lambda d: d.update(bogus=1), None, "bogus", "error", "Extra inputs"),
    "a grid that divides by zero": (lambda d: d["launch"].update(grid=["rows // (block - block)"]), None, "launch.grid[0]", "error",
                                    "divides by zero"),
    "a negative dimension": (lambda d: d["args"][0].update(shape=["rows - 100", "cols"]), None, "args[0].shape[0]", "error",
                             "not positive"),
    "a block of more than 1024 threads": (lambda d: d["shapes"][0].update(block=2048), None, "launch.block", "error", "more than 1024"),
    "an integer scalar that is not "
    "whole": (lambda d: d["args"][2].update(value="cols / 3"), None, "args[2].value", "error", "not a whole number"),
    "a name no shape defines": (lambda d: d["metric"].update(bytes="8 * rows * width"), None, "metric.bytes", "error", "'width'"),
    "a tuning value that changes an "
    "argument": (lambda d: d["tuning"].update(cols=[10, 20]), None, "tuning.cols", "error", "changes argument"),
    "a reference outside the workspace": (lambda d: d.update(reference="../../outside.py:f"), None, "reference", "error",
                                          "outside the workspace"),
    "a missing source": (lambda d: d.update(source="nope.hip"), None, "source", "error", "does not exist"),
    "a bad entry": (lambda d: d["variants"]["gpu"].update(entry="rms norm; rm -rf"), None, "variants.gpu.entry", "error",
                    "not a kernel name"),
    "launch_args on a GPU kernel": (lambda d: d["variants"]["gpu"].update(launch_args=True), None, "variants.gpu.launch_args", "error",
                                    "host twins"),
    "a reference that raises": (None, "    raise ValueError('broken on purpose')\n", "reference", "error", "ValueError: broken on purpose"),
    "a reference that exits": (None, "    sys.exit(3)\n", "reference", "error", "sys.exit(3)"),
    "a reference that hangs": (None, "    time.sleep(60)\n", "reference", "error", "did not finish within 5 s"),
    "a reference of the wrong size": (None, "    return {'y': np.zeros(3)}\n", "reference", "error", "the spec declares [8, 1000]"),
    "a reference missing an output": (None, "    return {'z': inputs['x']}\n", "reference", "error", "returned no 'y'"),
    "a reference with NaN": (lambda d: d["tolerance"].update(nan_policy="forbid"), "    return {'y': np.full(inputs['x'].shape, np.nan)}\n",
                             "reference", "error", "NaN"),
    "a placeholder left": (lambda d: d["launch"].update(block=["TODO: threads per block"]), None, "launch.block[0]", "todo", "placeholder"),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_each_defect_is_found_with_its_field_path_and_a_next_step(example, case):
    change, reference, path, severity, text = BROKEN[case]
    if change is not None:
        _edit(example, change)
    if reference is not None:
        _reference(example, reference)
    result = check(example)
    found = [p for p in result.problems if p.path == path and p.severity == severity]
    assert not result.ok and found, result.problems
    assert any(text in p.cause for p in found), found
    assert all(p.next_step for p in result.problems)


def test_several_defects_are_reported_at_once(example):
    _edit(example, lambda d: (d["args"][0].update(shape=["rows - 100", "cols"]), d["metric"].update(bytes="width")))
    paths = {p.path for p in check(example).problems}
    assert {"args[0].shape[0]", "metric.bytes"} <= paths


def test_builds_report_resource_usage_and_a_compile_error_with_its_line(example):
    ok = check(example, targets=["gfx1201", "host"])
    built = {(b.variant, b.target): b for b in ok.builds}
    assert built[("gpu", "gfx1201")].ok and built[("gpu", "gfx1201")].kernels[0].vgprs and built[("gpu",
                                                                                                  "gfx1201")].symbol.startswith("_Z11rmsnorm_f32ILi32E")
    assert built[("host", "host")].ok and ("host", "gfx1201") not in built and ("gpu", "host") not in built
    source = example.root / "k" / "rmsnorm.hip"
    source.write_text(source.read_text().replace("sum += row_x[c] * row_x[c];", "sum += undeclared_name;"))
    broken = check(example, targets=["gfx1201"])
    problem = next(p for p in broken.problems if p.path == "variants.gpu")
    assert "k/rmsnorm.hip:13:" in problem.cause and "undeclared_name" in problem.cause


def test_whether_this_machine_can_run_each_target_is_said_plainly(example):
    answers = {r.target: r for r in check(example, targets=["host", "sm_90"], run_reference=False).runnable}
    assert answers["host"].can_run and answers["host"].backend == "c"
    assert answers["sm_90"].backend == "cuda" and answers["sm_90"].reason  # True on a GPU machine, with the device named; else why not


def test_broken_yaml_and_deep_nesting_are_problems_not_crashes(example):
    spec = example.root / "k" / "kernel.yaml"
    spec.write_text("name: [unclosed\n")
    assert check(example).problems[0].path == "(file)"
    spec.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    result = check(example)
    assert not result.ok and result.problems[0].path == "(file)"


def test_a_gpu_variants_wrong_entry_is_an_error_at_its_field_when_no_target_is_given(workspace):
    import shutil

    shutil.copytree(REPO / "kernels" / "examples" / "rmsnorm", workspace.root / "rmsnorm")
    spec = workspace.root / "rmsnorm" / "kernel.yaml"
    spec.write_text(spec.read_text().replace("entry: rmsnorm_f32<BLOCK>", "entry: rms_norm_nope<BLOCK>", 1))
    result = run_spec_check(SpecCheckRequest(spec="rmsnorm"), workspace)
    assert not result.ok and result.builds == []
    (problem,) = [p for p in result.problems if p.severity == "error"]
    assert problem.path == "variants.gpu.entry" and "declares no function 'rms_norm_nope'" in problem.cause
