"""Requests and results of optimize_start, optimize_status, optimize_propose, optimize_stop and optimize_report: a
campaign over one workload (or a list, one after another) that keeps only what it measured to help."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from hyperloom.core.evidence import Evidence
from hyperloom.core.requests import Request
from hyperloom.tools.workload.models import CandidateResult

Phase = Literal["baseline", "levers", "combine", "kernels", "revalidate", "sweep", "closed"]
Decision = Literal["WINNER", "DROPPED", "KEEP", "REVERT", "MEASURED", "REGRESSION"]
TIMED = ("FASTER", "NOT_FASTER")  # the verdicts of a candidate that was timed
State = Literal["running", "stopped", "closed", "not running"]


class OptimizeRequest(Request):
    workload: str | None = Field(None, max_length=300, description="module:function or file.py:function; omit to resume.")
    workload_list: list[str] = Field(default_factory=list, max_length=64, description="Or several, in turn (sessions NAME.N).")
    ray: str | None = Field(None, max_length=300, description="workload_list on Ray: local, or an address.")
    session: str | None = Field(None, max_length=80, description="Name; an existing one resumes.")
    knobs: dict[str, str] = Field(default_factory=dict, max_length=32, description="Baseline knobs.")
    k: float | None = Field(None, ge=1, le=100, allow_inf_nan=False, description="Twin rule's k for the freeze (default 1.5).")
    levers: list[str] | None = Field(None, max_length=64, description="start: tried alone (default all); propose: to stack.")
    budget_gpu_hours: float = Field(1.0, gt=0, le=10000, description="Device-hour budget.")
    max_candidates: int = Field(64, ge=1, le=10000, description="Most candidates.")
    patience: int | None = Field(None, ge=1, le=10000, description="Timed candidates without a gain.")
    deadline_s: float | None = Field(None, gt=0, le=30 * 86400, description="Wall-clock limit.")
    target_speedup: float | None = Field(None, gt=1, le=1000, description="Speedup that ends the search.")
    proposal_wait_s: float = Field(0.0, ge=0, le=86400, description="Wait for proposals.")
    profile_kernels: bool | None = Field(None, description="Profile for kernels; default on a GPU.")
    pairs: int = Field(6, ge=5, le=200, description="A/B pairs.")
    steps_per_leg: int = Field(3, ge=1, le=1000, description="Steps per leg.")
    timeout_s: float = Field(900.0, gt=0, le=7200, description="Per worker call.")
    devices: list[int] | None = Field(None, max_length=64, description="GPUs; default idle.")
    fixed_inputs: bool = Field(False, description="Keep fixed-input gains.")

    @model_validator(mode="after")
    def _one_workload_or_a_list(self) -> OptimizeRequest:
        if self.workload is not None and self.workload_list:
            raise ValueError("pass workload or workload_list, not both")
        if not self.workload and not self.workload_list and not self.session:
            raise ValueError("pass workload (or workload_list), or the session of a frozen workload to resume")
        if self.ray is not None and not self.workload_list:
            raise ValueError("ray spreads a pass: give workload_list (one campaign per workload), or leave ray unset")
        return self

    @property
    def budget_device_s(self) -> float:
        return self.budget_gpu_hours * 3600.0

    # Fixed here, not asked (the tools/list budget): a freeze through optimize declares exact outputs (freeze with
    # workload freeze first to declare a tolerance), two warm-up steps, a 2 % noise band, and the MCP call returns at once.
    warmup_steps: ClassVar[int] = 2
    noise_band: ClassVar[float] = 0.02


class OptimizeRef(Request):
    session: str = Field(max_length=80, description="Session name.")


class OptimizeProposeRequest(Request):
    session: str = Field(max_length=80, description="Session name.")
    levers: list[str] = Field(min_length=1, max_length=16, description="Levers stacked on the kept ones.")
    note: str = Field("", max_length=500, description="Why, kept in the ledger.")


class ProposeResult(BaseModel):
    accepted: bool
    key: str
    summary: str


class Record(BaseModel):
    """One measurement of the campaign: a candidate, a revalidation or a sweep point."""

    seq: int
    key: str = Field(description="Novelty key: the phase's kind, the reference stack, the candidate's levers (file contents "
                                 "hashed), the point.")
    phase: Phase
    reference: list[str] = Field(description="The levers of the reference it was A/B-timed against ([]: the baseline).")
    point: dict[str, str] | None = Field(None, description="Sweep: the knob values of the point.")
    proposer: str = Field(description="catalog, prior (what won together on this kind of model before), combination, agent, "
                                      "profile or campaign.")
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
    workload: str
    folder: str
    state: State
    phase: Phase
    summary: str
    candidates: int = Field(description="Candidates tried (revalidations and sweep points not counted).")
    pending_proposals: int
    stack: list[str] = Field(description="The kept levers, in the order kept.")
    gain: float | None = Field(description="The stack's speedup over the baseline, MEASURED in its last revalidation.")
    gain_ci95: list[float] | None = None
    baseline_step_s: float | None = Field(description="The baseline's median step, MEASURED: its timed windows (device time on a GPU).")
    baseline_inputs_step_s: float | None = Field(None,
                                                 description="The baseline's inputs(seed) a step, outside its timed window, MEASURED.")
    budget_device_s: float
    spent_device_s: float
    spent_by_part_s: dict[str, float] = Field(default_factory=dict,
                                              description="spent_device_s by part: freeze, references (their "
                                                          "workers' " "start: build, warm-up, outputs, profile), solo legs, trials, "
                                                                      "profile (the kernel proposals').")
    stop_reason: str | None
    error: str | None = None
    workloads: list[WorkloadRow] = Field(default_factory=list, description="A pass over several workloads: one row each.")


class SweepNote(BaseModel):
    declared: int = Field(description="Points the workload declared.")
    swept: int
    note: str


class OptimizeReport(BaseModel):
    status: OptimizeStatus
    records: list[Record] = Field(description="Every measurement in order: candidates, revalidations, sweep points.")
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
