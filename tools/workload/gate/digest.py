"""Controller side: every timed step's outputs proved produced, by their digests (window.py: a float output's L2 norm,
an integer output's sum, taken inside the window) against the reference's of the same inputs. Only one step a leg is
copied and gated in full; the others are held to what their tolerance implies for a norm: |‖c‖ - ‖r‖| <= ‖c - r‖, so
an output the gate would pass is never refused here, and a step that skipped its work (a stale buffer, zeros, a result
left for a later step) is.

Not checked by digest: generated tokens and their top-k lists (a greedy decode may part at a near tie, honestly), and
integer outputs not judged exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hyperloom.tools.workload.gate import generated
from hyperloom.tools.workload.models import OutputTolerance
from hyperloom.tools.workload.gate.twin import TEACHER, is_twin

NORM_SLACK = 1e-4
"""Two L2 norms of the same values, accumulated in float32 in another order (another memory layout), differ by about
1e-6 of the norm: allowed this much beside what the tolerance allows."""


@dataclass(frozen=True)
class Bound:
    """How far an output's digest may be from the reference's: `rel` of the reference's digest plus `abs_`, at least
    `floor` (the twin rule's relative error reads as an absolute one against a zero output); (0, 0, 0): exact."""

    rel: float
    abs_: float = 0.0
    floor: float = 0.0

    def allowed(self, reference: float) -> float:
        return max(self.rel * abs(reference) + self.abs_, self.floor)


def bounds(tolerances: dict[str, OutputTolerance], references: dict[str, np.ndarray]) -> dict[str, Bound]:
    """The outputs whose digests are held to their reference's, with their bounds."""
    skipped = generated.grouped(generated.companions(references))
    held: dict[str, Bound] = {}
    for name, reference in references.items():
        tolerance = tolerances.get(name)
        if tolerance is None or name in skipped or is_twin(name) or name.endswith(TEACHER):
            continue
        if reference.dtype.kind in "iub":
            if tolerance.derived is None and tolerance.match >= 1.0:
                held[name] = Bound(0.0)
            continue
        if tolerance.derived is not None:
            if "rel_l2" in tolerance.derived.baseline_error:
                rel = tolerance.derived.live_bound("rel_l2")
                held[name] = Bound(rel + NORM_SLACK, floor=rel)
            continue
        held[name] = Bound(tolerance.rtol + NORM_SLACK, tolerance.atol * math.sqrt(reference.size))
    return held


def mismatch(candidate: list[dict[str, float]], reference: list[dict[str, float]], held: dict[str, Bound]) -> str | None:
    """The first step whose digest is beyond its bound from the reference's of the same inputs, said; or None."""
    for step, (mine, theirs) in enumerate(zip(candidate, reference, strict=False)):
        for name, bound in held.items():
            if name not in theirs:
                continue
            if name not in mine:
                return f"timed step {step + 1}'s outputs lack {name}"
            c, r = mine[name], theirs[name]
            if math.isnan(c) and math.isnan(r):
                continue
            apart = abs(c - r) if math.isfinite(c) and math.isfinite(r) else math.inf if c != r else 0.0
            if math.isnan(apart) or apart > bound.allowed(r):
                kind = "sum" if bound == Bound(0.0) else "L2 norm"
                return (f"timed step {step + 1}'s {name}: its {kind} {c:.7g} against the reference's {r:.7g} on the same inputs, beyond "
                        f"the {bound.allowed(r):.3g} its tolerance allows (a step that did not produce its outputs: a stale or skipped "
                        "result)")
    return None
