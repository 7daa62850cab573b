"""What the pipeline reports of a candidate: each input set's verdict, and the evaluation that sums them up."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.tools.pipeline.stats import SampleStats, summarize
from hyperloom.tools.runtime.models import TrialResult

Status = Literal["PASSED", "WRONG", "NAN", "NONDETERMINISTIC", "OUT_OF_BOUNDS", "IMPOSSIBLE", "DEGENERATE", "TIMEOUT", "CRASH", "ERROR"]
Check = Literal["gate", "guard", "timed_launch", "fresh_inputs", "determinism", "roof", "reference_audit"]
"""Which check a verdict is: the gate on an input set; the guards around its buffers; the outputs of the last timed launch
on a secret input set; a launch on a second secret set after the timed ones; the first and last timed launches
agreeing; the time against the measured roof; the reference itself (not degenerate)."""


class InputSetVerdict(BaseModel):
    input_set: str
    passed: bool
    summary: str
    check: Check = Field("gate", description="Which check this is (see Check).")
    status: Literal["OK", "TIMEOUT", "CRASH", "ERROR"] = "OK"
    nan: bool = Field(False, description="A failing case had NaN where the reference had none.")
    elapsed_s: float = Field(0.0, description="Seconds the worker process ran (device time spent on this set).")


class Evaluation(BaseModel):
    """A candidate gated on every input set, then timed: PASSED with its samples, or the first reason it was not."""

    status: Status
    reason: str = ""
    input_set: str | None = Field(None, description="Where it failed first: an input set, or 'timing'.")
    verdicts: list[InputSetVerdict] = Field(default_factory=list, description="Each input set gated, in order.")
    timing_failure: InputSetVerdict | None = Field(None, description="The timing run, when it did not complete or a check of it failed.")
    timing: TrialResult | None = Field(None, description="The timing run, when it completed.")
    integrity: list[InputSetVerdict] = Field(default_factory=list, description="What the timing ran, judged: guards, timed launches, roof.")
    check: Check | None = Field(None, description="The check that refused it.")
    device: str = Field("", description="The device its worker reported on the last launch that named one ('' when none did).")

    @property
    def passed(self) -> bool:
        return self.status == "PASSED"

    @property
    def failed(self) -> list[InputSetVerdict]:
        """Every input set that failed, then the timing run when it did not complete."""
        return [v for v in self.verdicts if not v.passed] + ([self.timing_failure] if self.timing_failure else [])

    @property
    def kernel(self) -> SampleStats | None:
        return summarize(self.timing.kernel_s) if self.timing is not None and self.timing.kernel_s else None
