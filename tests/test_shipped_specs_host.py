"""Every shipped kernel.yaml with a host variant (a C twin) passes its own gate on the host CPU, at every
shape small enough for a test.

A shape is run when its metric says at most SMALL_BYTES moved and SMALL_FLOPS done per launch, which keeps
each case to a few seconds; the others are skipped with their figures (`pytest -rs` lists them): the
production shapes, where drawing the inputs and the numpy reference take longer than the test should and a
C twin at about 1 GFLOP/s takes minutes (fma's shape 1 is 142 GFLOP).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.kernelspec.expr import evaluate
from hyperloom.tools.kernelspec.load import load_spec

SMALL_BYTES = 4 << 20
SMALL_FLOPS = 100_000_000
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 6, "max_time_s": 0.05, "target_ci": 1.0, "flush_cache": False}


def host_cases() -> list:
    """(spec folder, variant, shape index) for every host variant of every shipped spec, too-large shapes marked skip."""
    cases = []
    shipped = Workspace.at(REPO)
    for path in sorted((REPO / "kernels").glob("**/kernel.yaml")):
        loaded = load_spec(path, shipped)
        spec = loaded.spec
        for name, variant in spec.variants.items():
            if (variant.language or spec.language) != "c":
                continue
            for index in range(len(spec.shapes)):
                shape = loaded.shape(index)
                moved = evaluate(spec.metric.bytes, shape) if spec.metric and spec.metric.bytes else 0
                done = evaluate(spec.metric.flops, shape) if spec.metric and spec.metric.flops else 0
                folder = path.parent.relative_to(REPO / "kernels")
                marks = []
                if moved > SMALL_BYTES or done > SMALL_FLOPS:
                    reason = (f"{folder} shape {index}: {moved:.3g} bytes, {done:.3g} flops per launch, beyond {SMALL_BYTES:.3g} bytes / "
                              f"{SMALL_FLOPS:.3g} flops")
                    marks.append(pytest.mark.skip(reason=reason))
                cases.append(pytest.param(folder, name, index, marks=marks, id=f"{folder}-{name}-shape{index}"))
    return cases


@pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
@pytest.mark.parametrize(("folder", "variant", "shape"), host_cases())
def test_every_small_host_shape_of_a_shipped_spec_passes_its_gate(workspace, folder: Path, variant: str, shape: int):
    group = folder.parts[0]  # a spec may name files of its group (../packing.py, ../w4a16_tiled.cu)
    shutil.copytree(REPO / "kernels" / group, workspace.root / group)
    result = run_bench(BenchRequest(spec=str(folder), variant=variant, target="host", shape=shape, **QUICK), workspace)
    failed = [f"{v.input_set}: {v.summary}" for v in result.gate if not v.passed]
    assert result.gate and not failed, failed
    assert result.ok, result.summary


@pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
def test_the_fma_host_twin_runs_the_whole_grid_of_its_large_shape(workspace):
    """Issue 23: the twin once fixed its grid at shape 0's 264 blocks, so shape 1 (8448 blocks) left most of `out`
    unwritten. Shape 1's grid at one iteration instead of 4096 is 35 MFLOP, small enough to run here."""
    shutil.copytree(REPO / "kernels" / "microbench" / "fma", workspace.root / "fma")
    spec_file = workspace.root / "fma" / "kernel.yaml"
    spec = yaml.safe_load(spec_file.read_text())
    large = spec["shapes"][1]
    assert large["blocks"] > spec["shapes"][0]["blocks"]
    spec["shapes"] = [{**large, "iters": 1}]
    spec_file.write_text(yaml.safe_dump(spec))
    result = run_bench(BenchRequest(spec="fma", variant="host", target="host", shape=0, **QUICK), workspace)
    assert [v.passed for v in result.gate] == [True], result.summary
