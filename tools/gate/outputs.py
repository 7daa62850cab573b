"""The gate on a GPU launch's outputs inside the worker that ran it, while they are still in its memory.

A tune session gates thousands of candidates. Gated in the caller's process, every output was written to a .npy
file, read back and compared under one interpreter that every device's thread shares (on two H200s that
comparison grew from 8 to 12 ms a candidate while the second GPU waited). A GPU worker compares its own outputs
instead, with the same judge() over the same frozen references, which the caller verified against their manifest
(output_gate), and returns the verdict. The verdict can be trusted there: a GPU kernel reaches device memory only,
never the host arrays its outputs are copied into or the reference files, and a trial that does not end OK has no
verdict. A host (c) kernel runs inside its worker's process, so its outputs are still written out and compared by
the caller (tools/pipeline/trial.py check_input_set).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.check import Case, judge
from hyperloom.tools.gate.freeze import load_reference_set
from hyperloom.tools.gate.models import GateResult, OutputCheck, OutputGate, Tolerance
from hyperloom.tools.gate.sources import InMemory, NpyFile


def output_gate(reference_set: Path, outputs: list[str], case_names: list[str], workspace: Workspace) -> OutputGate:
    """The gate for a launch whose `outputs` (argument names, in the set's case order) meet the frozen `reference_set`,
    verified here (or remembered verified: tools/gate/freeze.py)."""
    folder = workspace.check(reference_set, kind="dir", what="reference_set")
    frozen = load_reference_set(folder, workspace)
    if len(frozen.reference_paths) != len(outputs) or len(case_names) != len(outputs):
        raise HyperloomError(
            f"{len(outputs)} outputs and {len(case_names)} case names, but the reference set {workspace.relative(folder)!r} holds "
            f"{len(frozen.reference_paths)} references",
            "freeze one reference per output buffer, in the spec's order of outputs",
        )
    return OutputGate(
        checks=[OutputCheck(output=output, case=case, reference=str(path), reference_sha256=frozen.reference_sha256[path])
                for output, case, path in zip(outputs, case_names, frozen.reference_paths, strict=True)],
        tolerance=frozen.tolerance, reference_set=workspace.relative(frozen.folder),
    )


def judge_outputs(outputs: dict[str, np.ndarray], gate: OutputGate) -> GateResult:
    """The verdict on a launch's outputs (by argument name), as correctness_gate gives it for the same arrays saved to files."""
    cases = []
    for check in gate.checks:
        if check.output not in outputs:
            raise HyperloomError(f"the gate names output {check.output!r}, which the launch did not copy back", "name an output buffer of the spec")
        cases.append(Case(check.case, InMemory(outputs[check.output], f"candidate {check.case}"),
                          NpyFile.open(Path(check.reference), f"reference {check.case} ({check.reference})", check.reference_sha256)))
    return judge(cases, gate.tolerance, keep=gate.max_reported_mismatches, reference_set=gate.reference_set, target=None)


def agreement(first: dict[str, np.ndarray], second: dict[str, np.ndarray], tolerance: Tolerance, names: dict[str, str] | None = None) -> GateResult:
    """Whether two launches' outputs on the same inputs agree within `tolerance` (the second judged against the first),
    by argument name; `names` gives each output's case name (default the argument's)."""
    cases = [Case((names or {}).get(name, name), InMemory(second[name], f"second launch {name}"), InMemory(array, f"first launch {name}"))
             for name, array in first.items() if name in second]
    return judge(cases, tolerance, keep=5, reference_set=None, target=None)


def judge_arrays(outputs: dict[str, np.ndarray], references: dict[str, np.ndarray], tolerance: Tolerance, case_names: dict[str, str]) -> GateResult:
    """The verdict on outputs against references both in memory (by argument name), each case named by `case_names`."""
    cases = [Case(case_names[name], InMemory(outputs[name], f"candidate {case_names[name]}"), InMemory(references[name], f"reference {case_names[name]}"))
             for name in references]
    return judge(cases, tolerance, keep=10, reference_set=None, target=None)
