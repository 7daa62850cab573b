"""Requests and results of optimize_start, optimize_status, optimize_propose, optimize_stop and optimize_report: a
campaign over one workload (or a list, one after another) that keeps only what it measured to help."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from hyperloom.core.evidence import Evidence
from hyperloom.core.requests import Request
from hyperloom.tools.workload.models import WORKLOAD_DESCRIPTION, CandidateResult

Phase = Literal["baseline", "levers", "combine", "kernels", "revalidate", "sweep", "closed"]
Decision = Literal["WINNER", "DROPPED", "KEEP", "REVERT", "MEASURED", "REGRESSION"]
State = Literal["running", "stopped", "closed", "not running"]


class OptimizeRequest(Request):
    workload: str | None = Field(None, max_length=300, description=WORKLOAD_DESCRIPTION + " Omit to use the session's frozen workload.")
    workloads: list[str] = Field(default_factory=list, max_length=64, description="Several workloads, one campaign each, in turn (sessions SESSION.N).")
    session: str | None = Field(None, max_length=80, description="Name; an existing one resumes. Frozen as workload NAME.")
    knobs: dict[str, str] = Field(default_factory=dict, max_length=32, description="Baseline knob values.")
    atol: float = Field(0.0, ge=0, allow_inf_nan=False, description="Freeze: float outputs' atol.")
    rtol: float = Field(0.0, ge=0, allow_inf_nan=False, description="Freeze: float outputs' rtol.")
    token_match: float = Field(1.0, gt=0, le=1, description="Freeze: share of equal integer outputs.")
    levers: list[str] | None = Field(None, max_length=64, description="Levers to try alone; default every applicable one and each Literal knob value.")
    budget_gpu_hours: float = Field(1.0, gt=0, le=10000, description="Device-hours the workers may spend.")
    max_candidates: int = Field(64, ge=1, le=10000, description="Most candidates tried.")
    patience: int | None = Field(None, ge=1, le=10000, description="End the search after this many timed candidates without a keep.")
    deadline_s: float | None = Field(None, gt=0, le=30 * 86400, description="Wall-clock limit of this run.")
    target_speedup: float | None = Field(None, gt=1, le=1000, description="End the search once the stack is this much faster.")
    proposal_wait_s: float = Field(0.0, ge=0, le=86400, description="Kernel phase: wait this long for proposals.")
    pairs: int = Field(6, ge=5, le=200, description="A/B pairs per candidate.")
    steps_per_leg: int = Field(3, ge=1, le=1000, description="Steps per leg.")
    warmup_steps: int = Field(2, ge=1, le=100, description="Steps before timing.")
    noise_band: float = Field(0.02, ge=0, le=0.5, description="Smallest gain that counts.")
    timeout_s: float = Field(900.0, gt=0, le=7200, description="Limit per worker call.")
    devices: list[int] | None = Field(None, max_length=64, description="GPUs; default the idle ones.")
    background: bool = Field(True, description="Return at once.")

    @model_validator(mode="after")
    def _one_workload_or_a_list(self) -> OptimizeRequest:
        if self.workload is not None and self.workloads:
            raise ValueError("pass workload or workloads, not both")
        if not self.workload and not self.workloads and not self.session:
            raise ValueError("pass workload (or workloads), or the session of a frozen workload to resume")
        return self

    @property
    def budget_device_s(self) -> float:
        return self.budget_gpu_hours * 3600.0


class OptimizeRef(Request):
    session: str = Field(max_length=80, description="Session name.")


class OptimizeProposeRequest(Request):
    session: str = Field(max_length=80, description="Session name.")
    levers: list[str] = Field(min_length=1, max_length=16, description="Levers stacked on the kept ones, e.g. [\"overrides:k.py\"].")
    note: str = Field("", max_length=500, description="Why, kept in the ledger.")


class ProposeResult(BaseModel):
    accepted: bool
    key: str
    summary: str


class Record(BaseModel):
    """One measurement of the campaign: a candidate, a revalidation or a sweep point."""

    seq: int
    key: str = Field(description="Novelty key: the phase's kind, the reference stack, the candidate's levers (file contents hashed), the point.")
    phase: Phase
    reference: list[str] = Field(description="The levers of the reference it was A/B-timed against ([]: the baseline).")
    point: dict[str, str] | None = Field(None, description="Sweep: the knob values of the point.")
    proposer: str = Field(description="catalog, combination, agent or campaign.")
    note: str = ""
    decision: Decision
    fallback: list[str] | None = Field(None, description="A revalidation that failed: the stack it reverted to.")
    result: CandidateResult
    device: str
    device_s: float = Field(description="Seconds its workers held the device, MEASURED (wall clock).")
    finished_at: str


class WorkloadRow(BaseModel):
    """One workload of a pass over several."""

    session: str
    workload: str
    state: State
    baseline_step_s: float | None
    stack: list[str]
    gain: float | None
    spent_device_s: float
    stop_reason: str | None


class OptimizeStatus(BaseModel):
    session: str
    folder: str
    state: State
    phase: Phase
    summary: str
    recorded: int
    candidates: int = Field(description="Candidates tried (revalidations and sweep points not counted).")
    pending_proposals: int
    stack: list[str] = Field(description="The kept levers, in the order kept.")
    gain: float | None = Field(description="The stack's speedup over the baseline, MEASURED in its last revalidation.")
    gain_ci95: list[float] | None = None
    baseline_step_s: float | None = Field(description="The baseline's median step, MEASURED.")
    budget_device_s: float
    spent_device_s: float
    stop_reason: str | None
    error: str | None = None
    workloads: list[WorkloadRow] = Field(default_factory=list, description="A pass over several workloads: one row each.")


class SweepNote(BaseModel):
    declared: int = Field(description="Points the workload declared.")
    swept: int
    note: str


class OptimizeReport(BaseModel):
    status: OptimizeStatus
    workload: str
    vendor: str
    baseline_step_s: float | None
    baseline_ci95_rel: float | None
    records: list[Record]
    revalidations: list[Record] = Field(description="The stack re-timed against the baseline after each keep.")
    sweep: list[Record]
    sweep_note: SweepNote
    notes: list[str] = Field(description="What the campaign skipped and why (conflicting levers, repeats, the Ray path).")
    evidence: Evidence | None
    report_md: str
    breakdown_json: str
    plot: str | None


def stack_of(records: list[Record]) -> list[str]:
    """The kept levers: the last record that changed the stack (a KEEP, a failed revalidation) says what it holds."""
    current: list[str] = []
    for record in records:
        if record.decision == "KEEP":
            current = record.result.levers
        elif record.phase == "revalidate" and record.decision == "REGRESSION":
            current = record.fallback or []
    return current
