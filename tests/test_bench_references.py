"""bench's reference cache: a reference runs once per exact computation, and again whenever anything it depends on changes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import REPO, loaded_spec
from hyperloom.core.cache import cache_dir
from hyperloom.tools.pipeline import references
from hyperloom.tools.kernelspec.load import draw_inputs


@pytest.fixture
def decode(tmp_path, monkeypatch):
    shutil.copytree(REPO / "kernels" / "decode", tmp_path / "decode")
    loaded = loaded_spec(tmp_path / "decode" / "w4a16" / "kernel.yaml", tmp_path)
    calls = []
    real = references.run_reference

    def counting(spec_loaded, shape, *args, **kwargs):
        calls.append(shape)
        return real(spec_loaded, shape, *args, **kwargs)

    monkeypatch.setattr(references, "run_reference", counting)
    return loaded, calls


def outputs(loaded, folder, input_set="seeded", shape_index=6):
    shape = loaded.shape(shape_index)
    inputs = draw_inputs(loaded.spec, shape, input_set)
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in inputs.items():
        np.save(folder / f"in_{name}.npy", array)
    (path,) = references.stage_references(loaded, shape, inputs, folder)
    return np.load(path)


def test_the_same_computation_runs_once_and_returns_the_same_outputs(decode, tmp_path):
    loaded, calls = decode
    first, second = outputs(loaded, tmp_path / "a"), outputs(loaded, tmp_path / "b")
    assert len(calls) == 1 and np.array_equal(first, second) and second.dtype == np.float32


def test_other_inputs_another_shape_or_an_edited_sibling_module_compute_afresh(decode, tmp_path):
    loaded, calls = decode
    outputs(loaded, tmp_path / "a")
    outputs(loaded, tmp_path / "b", input_set="ones")
    outputs(loaded, tmp_path / "c", shape_index=7)
    assert len(calls) == 3
    packing = loaded.path.parent.parent / "packing.py"  # the reference imports it: a change there must count
    packing.write_text(packing.read_text() + "\n# edited\n")
    outputs(loaded, tmp_path / "d")
    assert len(calls) == 4


def test_a_damaged_entry_is_recomputed_and_large_outputs_are_not_kept(decode, monkeypatch, tmp_path):
    loaded, calls = decode
    expected = outputs(loaded, tmp_path / "a")
    for entry in (cache_dir("references")).rglob("*.npy"):
        entry.write_bytes(b"not an array")
    assert np.array_equal(outputs(loaded, tmp_path / "b"), expected) and len(calls) == 2
    monkeypatch.setattr(references, "OUTPUT_LIMIT_BYTES", 0)
    outputs(loaded, tmp_path / "c", input_set="zeros")
    outputs(loaded, tmp_path / "d", input_set="zeros")
    assert len(calls) == 4
