"""The gate on a GPU launch's outputs inside the worker that ran it, while they are still in its memory.

A tune session gates thousands of candidates. Gated in the caller's process, every output was written to a .npy
file, read back and compared under one interpreter that every device's thread shares, while the other devices waited
(docs/decisions.md: The gate inside a GPU worker). A GPU worker compares its own outputs
instead, with the same judge() over the same frozen references, which the caller verified against their manifest
(output_gate), and returns the verdict. The verdict can be trusted there: a GPU kernel reaches device memory only,
never the host arrays its outputs are copied into or the reference files, and a trial that does not end OK has no
verdict. A host (c) kernel runs inside its worker's process, so its outputs are still written out and compared by
the caller (tools/pipeline/trial.py check_input_set).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import load_npy
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
            raise HyperloomError(f"the gate names output {check.output!r}, which the launch did not copy back",
                                 "name an output buffer of the spec")
        cases.append(Case(check.case, InMemory(outputs[check.output], f"candidate {check.case}"),
                          NpyFile.open(Path(check.reference), f"reference {check.case} ({check.reference})", check.reference_sha256)))
    return judge(cases, gate.tolerance, keep=gate.max_reported_mismatches, reference_set=gate.reference_set, target=None)


def judge_arrays(outputs: dict[str, np.ndarray], references: dict[str, np.ndarray], tolerance: Tolerance,
                 case_names: dict[str, str]) -> GateResult:
    """The verdict on outputs against references both in memory (by argument name), each case named by `case_names`."""
    cases = [Case(case_names[name], InMemory(outputs[name], f"candidate {case_names[name]}"),
                  InMemory(references[name], f"reference {case_names[name]}"))
             for name in references]
    return judge(cases, tolerance, keep=10, reference_set=None, target=None)


SAMPLE_ELEMENTS = 1 << 16
"""Outputs larger than this are judged on this many elements drawn at random after the launch (judge_sampled)."""


def judge_sampled(outputs: dict[str, np.ndarray], references: dict[str, np.ndarray], tolerance: Tolerance, case_names: dict[str, str],
                  seed: int) -> GateResult:
    """judge_arrays on at most SAMPLE_ELEMENTS elements of each output, at positions drawn from `seed` once the outputs exist,
    so a kernel cannot know which it is judged on; a kernel that skips work to gain time skips far more than a sample misses."""
    rng = np.random.default_rng(seed)
    picked_out, picked_ref = {}, {}
    for name, reference in references.items():
        out = outputs[name]
        if out.size <= SAMPLE_ELEMENTS or out.shape != reference.shape:
            picked_out[name], picked_ref[name] = out, np.asarray(reference)
            continue
        where = np.sort(rng.choice(out.size, SAMPLE_ELEMENTS, replace=False))
        picked_out[name], picked_ref[name] = out.reshape(-1)[where], np.asarray(reference).reshape(-1)[where]
    return judge_arrays(picked_out, picked_ref, tolerance, case_names)


def gate_references(gate: OutputGate) -> dict[str, np.ndarray]:
    """The references an OutputGate names, mapped from their files (read only where judged)."""
    return {check.output: load_npy(check.reference, mmap_mode="r") for check in gate.checks}


def judge_checked_launches(last: dict[str, np.ndarray], again: dict[str, np.ndarray], fresh: dict[str, np.ndarray],
                           timed_references: dict[str, np.ndarray],
                           fresh_references: dict[str, np.ndarray], tolerance: Tolerance, determinism: Tolerance | None,
                           case_names: dict[str, dict[str, str]]) -> dict[str, GateResult]:
    """A timing trial's checked launches judged: 'last' against the timed set's references, 'fresh' against the fresh
    set's, and 'determinism' (again against last, when asked); `case_names` by role then output."""
    import secrets

    gates = {"last": judge_sampled(last, timed_references, tolerance, case_names["last"], secrets.randbits(63)),
             "fresh": judge_sampled(fresh, fresh_references, tolerance, case_names["fresh"], secrets.randbits(63))}
    if again and determinism is not None:
        gates["determinism"] = judge_sampled(again, last, determinism, {n: f"again:{n}" for n in last}, secrets.randbits(63))
    return gates
