"""Tuning launch geometry: shape variables in a tuning block re-evaluate the launch; defines stay defines."""

from __future__ import annotations

import shutil

import pytest
import yaml

from helpers import REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.pipeline.launch import prepare, specialize
from helpers import loaded_spec
from hyperloom.tools.tune.models import TuneRequest
from hyperloom.tools.tune.session import open_session


@pytest.fixture
def decode(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "kernels" / "decode")
    return workspace


def test_a_variant_launch_and_tuning_override_the_specs(decode):
    loaded = loaded_spec(decode.root / "kernels/decode/w4a16/kernel.yaml", decode.root)
    simt, mma = prepare(loaded, "gpu", "sm_90", 4), prepare(loaded, "mma", "sm_90", 4)
    assert (simt.grid, simt.block) == ([128256 // 2], [128, 2])
    assert (mma.grid, mma.block) == ([128256 // 32], [32, 2])  # two 16-row tiles per block
    assert loaded.spec.tuning_of(simt.variant) == {"threads": [32, 64, 128, 256], "rows": [1, 2, 4, 8]}
    assert set(loaded.spec.tuning_of(mma.variant)) == {"warps", "tiles", "HL_UNROLL", "HL_PREFETCH"}


def test_shape_variables_steer_the_launch_and_the_rest_become_defines(decode):
    loaded = loaded_spec(decode.root / "kernels/decode/w4a16/kernel.yaml", decode.root)
    mma = prepare(loaded, "mma", "sm_90", 0)
    tuned, defines = specialize(mma, {"warps": 4, "tiles": 4, "HL_UNROLL": 2})
    assert (tuned.grid, tuned.block, defines) == ([4096 // 64], [32, 4], {"HL_UNROLL": 2})
    assert tuned.shape["warps"] == 4 and mma.shape["warps"] == 8  # the session's own launchable is untouched
    simt, _ = specialize(prepare(loaded, "gpu", "sm_90", 0), {"threads": "64", "rows": "4"})
    assert (simt.grid, simt.block) == ([4096 // 4], [64, 4])
    same, only_defines = specialize(mma, {"HL_STREAM": 0})
    assert same is mma and only_defines == {"HL_STREAM": 0}


@pytest.mark.parametrize(("params", "message"), [({"n": 8192}, "changes argument"), ({"warps": "many"}, "takes an integer")])
def test_a_geometry_that_changes_the_problem_or_is_not_a_number_is_refused(decode, params, message):
    mma = prepare(loaded_spec(decode.root / "kernels/decode/w4a16/kernel.yaml", decode.root), "mma", "sm_90", 0)
    with pytest.raises(HyperloomError, match=message) as error:
        specialize(mma, params)
    assert error.value.next_step


def test_a_tuning_block_over_a_problem_variable_is_refused_before_the_session_exists(decode):
    path = decode.root / "kernels/decode/w4a16/kernel.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["variants"]["mma"]["tuning"] = {"k": [4096, 8192]}
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(HyperloomError, match="changes argument"):
        open_session(TuneRequest(spec="kernels/decode/w4a16", variant="mma", target="sm_90", session="s", background=False), decode)
    assert not (decode.root / ".hyperloom" / "tune" / "s").exists()


def test_the_async_ring_depth_is_launch_geometry_its_shared_memory_follows(decode):
    loaded = loaded_spec(decode.root / "kernels/decode/w4a16_tiled/kernel.yaml", decode.root)
    ring = prepare(loaded, "mma_async", "sm_90", 3)
    assert (ring.grid, ring.block, ring.shared_bytes) == ([28672 // 32], [32, 4], 4 * 4 * 1280)
    deeper, defines = specialize(ring, {"stages": 8, "warps": 2})
    assert (deeper.block, deeper.shared_bytes, defines) == ([32, 2], 2 * 8 * 1280, {})
    assert prepare(loaded, "mma", "sm_90", 3).shared_bytes == 0  # the register variant asks for none
