"""What every candidate of one run is judged with besides its input sets: the secret sets its timed launches run on,
the roof its time must stay under, and the audit of the reference it is gated against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.audit import StagedSet, audit_references
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.models import InputSetVerdict
from hyperloom.tools.pipeline.roof import Roof
from hyperloom.tools.pipeline.secret import DrawnMeanwhile, SecretSets


@dataclass(frozen=True)
class Against:
    """What one evaluation judges a candidate against besides its input sets' references: the secret sets its timing
    runs on (their last launch gated, a launch on fresh inputs, the timed launches' determinism), the roof a time must
    not beat (None: the measured one) and the audit of the references (a failed one refuses a candidate that passed)."""

    secret: SecretSets | DrawnMeanwhile | None = None
    roof: Roof | None = None
    reference_audit: InputSetVerdict | None = None


NOTHING = Against()  # the input sets' references alone


@dataclass
class Judging:
    secret: SecretSets
    roof: Roof | None
    reference_audit: InputSetVerdict | None  # a refusing audit; None: the reference is not degenerate

    @classmethod
    def open(cls, launchable: Launchable, staged: Sequence[StagedSet], workspace: Workspace, *, roof: Roof | None,
             timeout_s: float) -> Judging:
        """Audit the reference on the staged sets and draw the secret sets (close() removes them)."""
        return cls(SecretSets.draw(launchable, workspace, timeout_s=timeout_s), roof, audit_verdict(staged, launchable))

    def against(self) -> Against:
        """What an evaluation judges each candidate of the run against."""
        return Against(self.secret, self.roof, self.reference_audit)

    def close(self) -> None:
        self.secret.close()


def audit_verdict(staged: Sequence[StagedSet], launchable: Launchable) -> InputSetVerdict | None:
    """The reference audit as a refusing verdict, or None when no trivial kernel passes the gate (or the spec says why
    a trivial answer is right: trivial_reference)."""
    degenerate = [f for f in audit_references(staged, launchable.loaded.spec.tolerance) if f.refuses]
    if not degenerate or launchable.loaded.spec.trivial_reference:
        return None
    return InputSetVerdict(input_set="reference_audit", check="reference_audit", passed=False, summary=(
        "; ".join(f.describe() for f in degenerate)
        + ": a kernel writing that passes this gate (draw other inputs, tighten the tolerance; spec_check shows it)"))
