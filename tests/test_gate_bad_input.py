"""Bad input to the gate is refused with its cause and a next step, never a crash."""

from __future__ import annotations

import os

import numpy as np
import pytest

from helpers import save
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest


def refused(workspace, **request) -> str:
    request.setdefault("atol", 0.0)
    request.setdefault("rtol", 0.0)
    with pytest.raises(HyperloomError) as caught:
        run_gate(GateRequest(**request), workspace)
    message = str(caught.value)
    assert "Next step:" in message
    return message


def test_a_missing_file_names_the_path_and_the_root(workspace):
    message = refused(workspace, candidates=["nope.npy"], references=["nope.npy"])
    assert "does not exist" in message and str(workspace.root) in message


def test_paths_outside_the_workspace_are_refused(workspace, tmp_path):
    outside = tmp_path / "outside.npy"
    np.save(outside, np.zeros(2))
    ok = save(workspace, "ok.npy", np.zeros(2))
    for sneaky in (str(outside), "../outside.npy", "sub/../../outside.npy"):
        assert "outside the workspace" in refused(workspace, candidates=[sneaky], references=[ok])


def test_a_symlink_that_leaves_the_workspace_is_refused(workspace, tmp_path):
    outside = tmp_path / "secret.npy"
    np.save(outside, np.zeros(2))
    os.symlink(outside, workspace.root / "link.npy")
    message = refused(workspace, candidates=["link.npy"], references=["link.npy"])
    assert "outside the workspace" in message


def test_a_file_that_is_not_npy_is_refused_by_name_and_by_content(workspace):
    (workspace.root / "out.txt").write_text("1 2 3")
    assert "not a .npy file" in refused(workspace, candidates=["out.txt"], references=["out.txt"])
    (workspace.root / "fake.npy").write_bytes(b"not numpy at all")
    assert "not a readable .npy" in refused(workspace, candidates=["fake.npy"], references=["fake.npy"])


def test_a_truncated_npy_is_refused(workspace):
    path = workspace.root / "cut.npy"
    np.save(path, np.arange(1000, dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-100])
    assert "truncated" in refused(workspace, candidates=["cut.npy"], references=["cut.npy"])


def test_object_arrays_are_never_unpickled(workspace):
    np.save(workspace.root / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert "never unpickled" in refused(workspace, candidates=["obj.npy"], references=["obj.npy"])


def test_unsupported_dtypes_name_a_way_out(workspace):
    save(workspace, "c.npy", np.zeros(3, np.complex64))
    assert "complex" in refused(workspace, candidates=["c.npy"], references=["c.npy"])


def test_mismatched_lists_are_refused(workspace):
    a = save(workspace, "a.npy", np.zeros(2))
    assert "2 candidates but 1 references" in refused(workspace, candidates=[a, a], references=[a])
    assert "case names" in refused(workspace, candidates=[a], references=[a], case_names=["x", "y"])


def test_an_undeclared_tolerance_is_refused(workspace):
    a = save(workspace, "a.npy", np.zeros(2))
    with pytest.raises(HyperloomError, match="tolerance is not declared"):
        run_gate(GateRequest(candidates=[a], references=[a]), workspace)


def test_inline_values_that_are_not_numbers_are_refused(workspace):
    assert "neither a number nor a file path" in refused(workspace, candidates=[[1, "abc"]], references=[[1, 2]])
    assert "rectangular" in refused(workspace, candidates=[[[1, 2], [3]]], references=[[1, 2]])
    assert "int8" in refused(workspace, candidates=[[300]], references=[[1]], inline_dtype="int8")


def test_a_workspace_variable_pointing_nowhere_is_refused(monkeypatch, tmp_path):
    from hyperloom.core.workspace import Workspace

    monkeypatch.setenv("HYPERLOOM_WORKSPACE", str(tmp_path / "missing"))
    with pytest.raises(HyperloomError, match="is not a directory"):
        Workspace.from_env()
