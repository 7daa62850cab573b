"""The roofline a CPU user is sent to (issue 67): `hyperloom roofline --target host` took 242 s on a 2-core machine and
its FMA ceiling ran past the 120 s trial limit; and what it measures, one core's scalar C loops, must not become the
roof of a torch workload that runs on every core (an honest step would be IMPOSSIBLE under it)."""

from __future__ import annotations

import types

import yaml

from helpers import write_roofline
from hyperloom.core.evidence import Tag, host_device, measured
from hyperloom.tools.roofline.models import Ceiling, RooflineRequest, RooflineResult
from hyperloom.tools.workload.models import ClassWork, StepWork
from hyperloom.tools.workload.checks.roof import ROOFLINE_FILE, known_ceilings, step_roof


def test_a_full_host_roofline_measures_memory_beyond_the_cache_and_compute_at_the_small_shape(workspace, monkeypatch):
    """The sizes, not the run: on the 2-core EPYC this repository runs on the run took 38 s with them (the shipped full
    shapes: copy 149 s, read 31 s, fma past its 120 s limit)."""
    from hyperloom.tools.roofline import api

    sizes: dict[str, dict] = {}

    def measure(name, target, device, shape, max_time_s, staged, ws):
        sizes[name] = yaml.safe_load((staged / name / "kernel.yaml").read_text())["shapes"][shape]
        return types.SimpleNamespace(device="host CPU: test", summary="not run"), None

    monkeypatch.setattr(api, "measure", measure)
    api.run_roofline(RooflineRequest(target="host", plot=False, same_size_read=False), workspace)
    floats = sizes["copy"]["n"]
    assert sizes["read"]["n"] == floats and 128 * 2**20 <= 4 * floats < 1 * 2**30, "beyond a core's last-level cache, under the shipped GiB"
    assert sizes["read"]["per_thread"] == 16
    assert 2 * sizes["fma"]["chains"] * sizes["fma"]["iters"] * sizes["fma"]["blocks"] * sizes["fma"]["block"] < 1e9, sizes["fma"]
    api.run_roofline(RooflineRequest(target="sm_90", plot=False, same_size_read=False, ceilings=["copy"]), workspace)
    assert sizes["copy"]["n"] == 268435456, "a GPU's full shape is the shipped one"


def _step() -> StepWork:
    return StepWork(classes={"gemm": ClassWork(ops=4, flops=537_000_000)}, compute_flops_by_dtype={"float": 537_000_000},
                    parameter_bytes=2_000_000, device_timed=False)


def test_the_host_microbenchmarks_one_core_ceilings_set_no_roof_for_a_cpu_workload(workspace):
    device = host_device()
    evidence = measured("hyperloom.bench", inputs_sha256="0" * 64, device=device, target="host")  # as `roofline --target host` records them
    ceilings = [Ceiling(name="fma", kind="compute", value=0.000957, unit="TFLOP/s", source="microbench fma: fma/host", evidence=evidence),
                Ceiling(name="copy", kind="memory", value=26.0, unit="GB/s", source="microbench copy: copy/host", evidence=evidence)]
    path = workspace.root / ROOFLINE_FILE
    path.parent.mkdir(parents=True)
    path.write_text(RooflineResult(summary="s", target="host", device=device, measured=ceilings, datasheet=[], placements=[], files=[],
                                   evidence=evidence).model_dump_json())
    found, _ = known_ceilings(workspace, device)
    roof = step_roof(_step(), found, "", device)
    assert found == [] and roof.roof_s is None, roof  # 0.28 s a step from the fmaf loop, 60x above torch's 5 ms
    assert "no candidate here is refused as IMPOSSIBLE" in roof.note and "nothing to do about it" in roof.note, roof.note
    assert "one core's scalar C loops" in roof.note


def test_a_roofline_of_the_whole_machine_still_sets_a_cpu_s_roof(workspace):
    """The seam the cheat tests use: ceilings not measured by the one-core host microbenchmarks are read."""
    write_roofline(workspace, host_device(), fma_tflops=0.4, memory_gbps=200.0)
    found, _ = known_ceilings(workspace, host_device())
    roof = step_roof(_step(), found, "", host_device())
    assert roof.roof_s is not None and roof.tag == Tag.MEASURED.value
