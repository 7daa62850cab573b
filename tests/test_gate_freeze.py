"""Frozen reference sets: written all or nothing, refused once anything in them changes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import save
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.freeze import freeze
from hyperloom.tools.gate.models import FreezeRequest, GateRequest


@pytest.fixture
def frozen(workspace):
    ref = save(workspace, "ref.npy", np.linspace(0, 1, 100, dtype=np.float32))
    inp = save(workspace, "x.npy", np.arange(100, dtype=np.float32))
    result = freeze(
        FreezeRequest(out="sets/a", references=[ref], inputs=[inp], atol=1e-3, rtol=0, case_names=["ramp"]), workspace
    )
    return workspace, result


def test_freezing_records_tolerance_and_every_hash(frozen):
    workspace, result = frozen
    manifest = json.loads((workspace.root / "sets/a/manifest.json").read_text())
    assert manifest["tolerance"] == {"atol": 1e-3, "rtol": 0.0, "max_ulp": None, "nan_policy": "forbid"}
    assert manifest["cases"][0]["name"] == "ramp" and len(manifest["cases"][0]["sha256"]) == 64
    assert manifest["inputs"][0]["path"] == "x.npy" and manifest["content_sha256"] == result.manifest_sha256
    assert result.evidence.tag.value == "MEASURED"


def test_the_gate_uses_the_frozen_tolerance(frozen):
    workspace, _ = frozen
    close = save(workspace, "close.npy", np.linspace(0, 1, 100, dtype=np.float32) + np.float32(5e-4))
    far = save(workspace, "far.npy", np.linspace(0, 1, 100, dtype=np.float32) + np.float32(5e-3))
    passed = run_gate(GateRequest(candidates=[close], reference_set="sets/a"), workspace)
    assert passed.passed and passed.cases[0].reference_sha256 == sha256_file(workspace.root / "sets/a/ref_000.npy")
    result = run_gate(GateRequest(candidates=[far], reference_set="sets/a"), workspace)
    assert not result.passed and result.reference_set == "sets/a" and result.cases[0].name == "ramp"


def test_a_tolerance_given_beside_a_frozen_set_is_refused(frozen):
    workspace, _ = frozen
    with pytest.raises(HyperloomError, match="declares its own references and tolerance"):
        run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a", atol=1.0), workspace)


def test_a_tampered_reference_is_refused(frozen):
    workspace, _ = frozen
    path = workspace.root / "sets/a/ref_000.npy"
    array = np.load(path)
    array[3] = 42
    np.save(path, array)
    with pytest.raises(HyperloomError, match="changed after freezing"):
        run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace)


def test_a_reference_tampered_after_the_gate_verified_its_set_is_still_refused(frozen, monkeypatch):
    """The gate remembers a verified set by its files' stamps; an edit in place that keeps the size and sets the
    modification time back still changes the change time, so the set is hashed again and refused."""
    import os
    import time

    from hyperloom.tools.gate import freeze as frozen_sets

    workspace, _ = frozen
    time.sleep(frozen_sets.RACY_NS / 1e9 + 0.01)  # files changed in the last clock ticks are never remembered
    assert run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace).passed
    hashed = []
    monkeypatch.setattr(frozen_sets, "sha256_file", lambda path: hashed.append(path) or sha256_file(path))
    assert run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace).passed
    assert hashed == []  # the remembered verification: nothing hashed again
    path = workspace.root / "sets/a/ref_000.npy"
    before = os.stat(path)
    with open(path, "r+b") as handle:  # same inode, same size
        handle.seek(before.st_size - 4)
        handle.write(np.float32(42).tobytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    with pytest.raises(HyperloomError, match="changed after freezing"):
        run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace)


def test_an_edited_manifest_is_refused(frozen):
    workspace, _ = frozen
    path = workspace.root / "sets/a/manifest.json"
    manifest = json.loads(path.read_text())
    manifest["tolerance"]["atol"] = 1.0
    path.write_text(json.dumps(manifest))
    with pytest.raises(HyperloomError, match="edited after freezing"):
        run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace)


def test_a_manifest_of_the_wrong_shape_is_refused_by_the_schema(frozen):
    workspace, _ = frozen
    (workspace.root / "sets/a/manifest.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(HyperloomError, match="reference_set format"):
        run_gate(GateRequest(candidates=["ref.npy"], reference_set="sets/a"), workspace)


def test_an_existing_set_is_kept_unless_overwrite_is_asked(frozen):
    workspace, first = frozen
    request = dict(out="sets/a", references=["x.npy"], atol=0, rtol=0)
    with pytest.raises(HyperloomError, match="already exists"):
        freeze(FreezeRequest(**request), workspace)
    second = freeze(FreezeRequest(**request, overwrite=True), workspace)
    assert second.manifest_sha256 != first.manifest_sha256
    assert sorted(p.name for p in (workspace.root / "sets").iterdir()) == ["a"]  # no staging debris


def test_a_folder_that_is_not_a_set_is_never_overwritten(workspace):
    (workspace.root / "precious").mkdir()
    (workspace.root / "precious/notes.txt").write_text("keep me")
    save(workspace, "r.npy", np.zeros(2))
    with pytest.raises(HyperloomError, match="not a reference set"):
        freeze(FreezeRequest(out="precious", references=["r.npy"], atol=0, rtol=0, overwrite=True), workspace)
    assert (workspace.root / "precious/notes.txt").read_text() == "keep me"


def test_a_failed_freeze_leaves_nothing_behind(workspace):
    save(workspace, "r.npy", np.zeros(2))
    (workspace.root / "bad.npy").write_bytes(b"garbage")
    with pytest.raises(HyperloomError):
        freeze(FreezeRequest(out="sets/b", references=["r.npy", "bad.npy"], atol=0, rtol=0), workspace)
    assert not (workspace.root / "sets/b").exists()
    assert not any(p.name.startswith(".") for p in workspace.root.rglob("*"))


def test_freezing_outside_the_workspace_is_refused(workspace):
    save(workspace, "r.npy", np.zeros(2))
    with pytest.raises(HyperloomError, match="outside the workspace"):
        freeze(FreezeRequest(out="../escape", references=["r.npy"], atol=0, rtol=0), workspace)
