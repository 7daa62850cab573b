"""Helpers shared by tests: save arrays into a workspace and run the gate on one case."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.core.dtypes import save_npy
from hyperloom.core.evidence import measured
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest, GateResult
from hyperloom.tools.roofline.models import Ceiling, RooflineResult
from hyperloom.tools.workload.checks.roof import ROOFLINE_FILE

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


def save(workspace: Workspace, name: str, array: Any, dtype: Any = None) -> str:
    """Save an array as a .npy in the workspace and return its relative path (bfloat16 and fp8 keep their dtype)."""
    save_npy(workspace.root / name, np.asarray(array, dtype=dtype))
    return name


def gate(workspace: Workspace, candidate: Any, reference: Any, **tolerance: Any) -> GateResult:
    """Run the gate on one case; arrays are saved as .npy files so the file path is exercised."""
    cand = candidate if isinstance(candidate, str) else save(workspace, "cand.npy", candidate)
    ref = reference if isinstance(reference, str) else save(workspace, "ref.npy", reference)
    tolerance.setdefault("atol", 0.0)
    tolerance.setdefault("rtol", 0.0)
    return run_gate(GateRequest(candidates=[cand], references=[ref], **tolerance), workspace)


KERNELS = FIXTURES / "kernels"


def copy_kernel(workspace: Workspace, name: str) -> str:
    """Copy a fixture kernel source into the workspace; return its workspace-relative path."""
    (workspace.root / name).write_bytes((KERNELS / name).read_bytes())
    return name


def loaded_spec(path: Path, root: Path | None = None):
    """A kernel spec loaded with `root` (default the repository) as its workspace."""
    from hyperloom.tools.kernelspec.load import load_spec

    return load_spec(path, Workspace.at(root or REPO))


def reference_of(loaded) -> Any:
    """The spec's reference function imported in this process (tests trust the shipped references;
    Hyperloom itself runs them in a worker process)."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(f"test_reference_{loaded.spec.name}", loaded.reference_file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, loaded.reference_name)


def interruptible() -> None:
    """preexec_fn for a child a test sends SIGINT: Ctrl-C's default action, even when the suite itself was started
    with SIGINT ignored (a non-interactive shell's `cmd &` ignores it in everything it starts)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def fingerprint_the_seed(spec_path: Path, workspace: Workspace, shape_index: int) -> None:
    """Write into the corpus spec's special_cases_seed variant the bits of the first input value of each set the spec's
    seed draws, as an agent that read the inputs would (tests/fixtures/cheats)."""
    import struct

    import yaml

    from hyperloom.tools.kernelspec.load import draw_inputs, load_spec

    spec = load_spec(spec_path, workspace).spec
    bits = {case: struct.unpack("<I", draw_inputs(spec, spec.shapes[shape_index], case)["x"][:1].tobytes())[0]
                  for case in ("seeded", "zeros", "extremes")}
    doc = yaml.safe_load(spec_path.read_text())
    doc["variants"]["special_cases_seed"]["defines"] = {"SEEDED_BITS": bits["seeded"], "ZEROS_BITS": bits["zeros"],
                                                        "EXTREMES_BITS": bits["extremes"]}
    spec_path.write_text(yaml.safe_dump(doc, sort_keys=False))


def refused_by(result: Any) -> set[str]:
    """The checks that refused a bench result (the gate on an input set, or a check of the timed launches)."""
    return {v.check for v in [*result.gate, *result.checks] if not v.passed}


def write_roofline(workspace: Workspace, device: str, fma_tflops: float, memory_gbps: float) -> None:
    """A roofline result as `hyperloom roofline` leaves it in the workspace: the seam through which ceilings reach the roof."""
    evidence = measured("roofline", inputs_sha256="0" * 64, device=device)
    ceilings = [Ceiling(name="fma", kind="compute", value=fma_tflops, unit="TFLOP/s", source="test", evidence=evidence),
                Ceiling(name="copy", kind="memory", value=memory_gbps, unit="GB/s", source="test", evidence=evidence)]
    result = RooflineResult(summary="test ceilings", target="host", device=device, measured=ceilings, datasheet=[], placements=[], files=[],
                            evidence=evidence)
    path = workspace.root / ROOFLINE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.model_dump_json())
