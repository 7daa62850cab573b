"""bench's reference cache: a reference runs once per exact computation, and again whenever anything it depends on changes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import REPO
from hyperloom.core.cache import cache_dir
from hyperloom.tools.bench import references
from hyperloom.tools.spec.load import draw_inputs, load_spec


@pytest.fixture
def decode(tmp_path, monkeypatch):
    shutil.copytree(REPO / "kernels" / "decode", tmp_path / "decode")
    loaded = load_spec(tmp_path / "decode" / "w4a16" / "kernel.yaml")
    calls = []
    real = references.reference_function

    def counting(spec_loaded):
        function = real(spec_loaded)
        return lambda inputs, shape: calls.append(shape) or function(inputs, shape)

    monkeypatch.setattr(references, "reference_function", counting)
    return loaded, calls


def outputs(loaded, input_set="seeded", shape_index=6):
    shape = loaded.shape(shape_index)
    return references.reference_outputs(loaded, shape, draw_inputs(loaded.spec, shape, input_set))


def test_the_same_computation_runs_once_and_returns_the_same_outputs(decode):
    loaded, calls = decode
    first, second = outputs(loaded), outputs(loaded)
    assert len(calls) == 1 and np.array_equal(first["y"], second["y"]) and second["y"].dtype == np.float32


def test_other_inputs_another_shape_or_an_edited_sibling_module_compute_afresh(decode):
    loaded, calls = decode
    outputs(loaded)
    outputs(loaded, input_set="ones")
    outputs(loaded, shape_index=7)
    assert len(calls) == 3
    packing = loaded.path.parent.parent / "packing.py"  # the reference imports it: a change there must count
    packing.write_text(packing.read_text() + "\n# edited\n")
    outputs(loaded)
    assert len(calls) == 4


def test_a_damaged_entry_is_recomputed_and_large_outputs_are_not_kept(decode, monkeypatch):
    loaded, calls = decode
    expected = outputs(loaded)["y"]
    for entry in (cache_dir("references")).rglob("*.npy"):
        entry.write_bytes(b"not an array")
    assert np.array_equal(outputs(loaded)["y"], expected) and len(calls) == 2
    monkeypatch.setattr(references, "OUTPUT_LIMIT_BYTES", 0)
    outputs(loaded, input_set="zeros")
    outputs(loaded, input_set="zeros")
    assert len(calls) == 4
