"""The reference audited before any candidate is judged against it: a gate that a trivial kernel passes is no gate.

For each output, trivial candidates are judged under the spec's own tolerance on every staged input set: all zeros,
one constant (the first element of the seeded reference), and each input of the same shape and dtype passed
through unchanged. Zeros or a constant passing on every set makes the reference degenerate for these inputs (the
uint16 `init: ones` case: denormal outputs a zero-writer matches): refused. An input passed through is reported
but not refused, since a copy kernel's reference is its input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hyperloom.tools.gate.models import Tolerance
from hyperloom.tools.gate.outputs import judge_arrays


@dataclass(frozen=True)
class StagedSet:
    name: str
    inputs: Mapping[str, np.ndarray]
    references: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class AuditFinding:
    output: str
    trivial: str  # what passes: "zeros", "a constant", "input x"
    refuses: bool

    def describe(self) -> str:
        return f"{self.trivial} passes as {self.output} on every input set under the declared tolerance"


def audit_references(sets: Sequence[StagedSet], tolerance: Tolerance) -> list[AuditFinding]:
    """Each trivial candidate that passes as an output on every set in `sets` (the seeded set first)."""
    if not sets:
        return []
    findings = []
    for output, first in sets[0].references.items():
        if first.size < 2:
            continue  # one value: nothing distinguishes a constant from the answer
        constant = first.flat[0]
        trivial = {"zeros": lambda s, o=output: np.zeros_like(s.references[o]),
                   "a constant": lambda s, o=output: np.full_like(s.references[o], constant)}
        copies = {f"input {name}": lambda s, n=name: s.inputs[n] for name, array in sets[0].inputs.items() if array.shape == first.shape
                                                                           and array.dtype == first.dtype}
        for label, make in {**trivial, **copies}.items():
            if all(_passes(make(each), each, output, tolerance) for each in sets):
                findings.append(AuditFinding(output, label, refuses=label in trivial))
    return findings


def _passes(candidate: np.ndarray, staged: StagedSet, output: str, tolerance: Tolerance) -> bool:
    reference = staged.references[output]
    if candidate.shape != reference.shape:
        return False
    return judge_arrays({output: candidate}, {output: reference}, tolerance, {output: f"{staged.name}:{output}"}).passed
