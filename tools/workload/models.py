"""Requests and results of workload_freeze and workload_bench: a workload's outputs frozen under a tolerance
declared before any candidate, and its end-to-end time beside candidates (levers and their combinations)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from hyperloom.core.evidence import Evidence
from hyperloom.core.requests import Request
from hyperloom.tools.pipeline.stats import SampleStats
from hyperloom.tools.workload import candidates as candidate_forms

WORKLOAD_DESCRIPTION = "file.py:function or module:function (a factory), or script.py (timed only)."
Verdict = Literal["FASTER", "NOT_FASTER", "REJECTED", "IMPOSSIBLE", "NO_OP", "CRASH", "TIMEOUT", "RAISED"]


class DerivedTolerance(BaseModel):
    """A tolerance derived at freeze from the model's own numerics (tools/workload/gate/twin.py): a candidate's error against
    the workload's float32 twin (float64 on a CPU and for a float32 model) may be at most `k` times the baseline's, each measure floored at
    `floor` (one machine epsilon of the output's dtype)."""

    k: float = Field(ge=1, allow_inf_nan=False)
    twin_dtype: str
    baseline_error: dict[str, float] = Field(description="Measure -> the baseline's own error against the twin, MEASURED at freeze.")
    floor: float = Field(ge=0, allow_inf_nan=False)
    inputs: int = Field(1, ge=1,
                        description="How many inputs the baseline's error was measured over (the frozen ones and fresh seeds), the largest "
                                    "kept.")

    def bound(self, measure: str) -> float:
        """The most a candidate's error against the twin may be under `measure`."""
        return self.k * max(self.baseline_error[measure], self.floor)

    def live_bound(self, measure: str) -> float:
        """The most a candidate may be from the baseline itself (not the twin) under `measure`: the triangle bound
        |c - b| <= |c - t| + |t - b|, (k + 1) x the baseline's error (floored)."""
        return (self.k + 1) * max(self.baseline_error[measure], self.floor)


class OutputTolerance(BaseModel):
    """One output's tolerance: floats match when |c - r| <= atol + rtol * |r|; integers (token ids) when the share of
    equal elements is at least `match`; with `derived`, by the twin rule instead (DerivedTolerance)."""

    atol: float = Field(0.0, ge=0, allow_inf_nan=False)
    rtol: float = Field(0.0, ge=0, allow_inf_nan=False)
    match: float = Field(1.0, gt=0, le=1, description="Integer outputs: the share of elements that must be equal (1: exact).")
    derived: DerivedTolerance | None = None


class WorkloadFreezeRequest(Request):
    workload: str = Field(max_length=300, description=WORKLOAD_DESCRIPTION)
    name: str | None = Field(None, max_length=80, description="Session name.")
    knobs: dict[str, str] = Field(default_factory=dict, max_length=32, description="Baseline knob values.")
    args: list[str] = Field(default_factory=list, max_length=64, description="Script arguments.")
    atol: float = Field(0.0, ge=0, allow_inf_nan=False, description="Floats' atol.")
    rtol: float = Field(0.0, ge=0, allow_inf_nan=False, description="Floats' rtol.")
    token_match: float = Field(1.0, gt=0, le=1, description="Integers: share equal (1: exact).")
    per_output: dict[str, dict[str, float]] = Field(default_factory=dict, max_length=64, description="Name: {atol, rtol, match}.")
    k: float | None = Field(None, ge=1, le=100, allow_inf_nan=False,
                            description="Twin rule: error vs the float32 twin <= k x the baseline's (default 1.5 if none declared).")

    @field_validator("per_output")
    @classmethod
    def _tolerances(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for name, tolerance in value.items():
            OutputTolerance.model_validate(tolerance, strict=False)  # an unknown key or a bound broken is refused here, named
            if set(tolerance) - set(OutputTolerance.model_fields):
                raise ValueError(f"per_output.{name} takes atol, rtol and match, not "
                                 f"{', '.join(sorted(set(tolerance) - set(OutputTolerance.model_fields)))}")
        return value
    warmup_steps: int = Field(1, ge=0, le=100, description="Steps before outputs are read.")
    timeout_s: float = Field(900.0, gt=0, le=7200, description="Limit per worker call.")
    overwrite: bool = Field(False, description="Replace a frozen session.")


class FrozenOutput(BaseModel):
    name: str
    shape: list[int]
    dtype: str = Field(description="As stored (bfloat16 and float8 widened to float32 exactly).")
    original_dtype: str
    tolerance: OutputTolerance
    spread: float = Field(description="Two baseline runs: floats, the largest |a - b| / (atol + rtol |b|) (<= 1 fits); integers, the share "
                                      "unequal.")
    sha256: str


class StepCosts(BaseModel):
    """What one timed step is made of, MEASURED at freeze on the baseline (timed.py's legs): the step and outputs() inside
    the timed window, inputs(seed) and the gated step's host copy outside it; notes where the harness's share is large."""

    figure: str = Field(description="device (events on the step's stream) or wall (the worker's clock).")
    step_s: float = Field(description="step() a step.")
    outputs_s: float = Field(description="outputs() and the digests of what it returns, a step: timed with the step.")
    inputs_s: float | None = Field(description="inputs(seed) a step, the device synchronized after it: outside the window. None: fixed "
                                               "inputs.")
    host_copy_s: float | None = Field(description="Copying one step's outputs to the host and saving them (the controller's clock): once a "
                                                  "leg, untimed.")
    notes: list[str] = Field(default_factory=list,
                             description="Where inputs(seed) or outputs() cost more than a tenth of the step, and what to do.")


class WorkloadFreezeResult(BaseModel):
    ok: bool
    summary: str
    name: str
    folder: str
    workload: str
    knobs: dict[str, str] = Field(description="The baseline's knob values (its factory's defaults unless given).")
    declared_knobs: dict[str, list[str] | None] = Field(description="Knobs the factory declares, with their values where a Literal lists "
                                                                    "them.")
    outputs: list[FrozenOutput]
    gated: bool = Field(description="False when the workload has no outputs(): candidates can be timed, not gated.")
    costs: StepCosts | None = Field(None, description="The baseline's step, outputs() and inputs(seed), measured apart (None: not timed).")
    vendor: str
    evidence: Evidence


class WorkloadBenchRequest(Request):
    name: str = Field(max_length=80, description="A frozen workload session (workload_freeze's name).")
    candidates: list[list[str]] = Field(default_factory=list, max_length=32, description=f"Candidates, {candidate_forms.FORM}.")
    pairs: int = Field(6, ge=5, le=200, description="A/B pairs.")
    steps_per_leg: int = Field(3, ge=1, le=1000, description="Steps per leg.")
    warmup_steps: int = Field(2, ge=1, le=100, description="Steps before timing.")
    noise_band: float = Field(0.02, ge=0, le=0.5, description="Smallest gain that counts.")
    target_ci: float = Field(0.02, gt=0, le=1, description="Baseline CI target.")
    max_baseline_legs: int = Field(30, ge=5, le=1000, description="Most baseline legs.")
    exclusive: bool = Field(False, description="Refuse a shared GPU.")
    fresh_workers: bool = Field(False, description="Build every candidate its own worker (no kept worker serving copies): "
                                "as a user's process runs it; on the H200 one compiled stack ran 6 ms legs served and 12 ms fresh.")
    timeout_s: float = Field(900.0, gt=0, le=7200, description="Limit per worker call.")

    @field_validator("candidates", mode="before")
    @classmethod
    def _candidates(cls, value: object) -> object:
        return candidate_forms.candidates(value)


class Engagement(BaseModel):
    lever: str
    engaged: bool
    evidence: str
    calls: int | None = Field(None, description="overrides: the replacements' calls in one profiled step.")
    wrapper_us: float | None = Field(None, description="overrides: the counting wrapper's own cost per call.")


class OutputCheck(BaseModel):
    output: str
    passed: bool
    detail: str


class ClassWork(BaseModel):
    """One op class's work in one profiled step: its ops (or unlinked kernels), their modelled flops and bytes (from the
    recorded shapes, tools/profile/work.py), and their time (device kernel time on a GPU, operator self time on a CPU)."""

    ops: int = 0
    flops: int = 0
    bytes_moved: int = 0
    time_s: float = 0.0


class StepWork(BaseModel):
    """The work of one profiled step, by class (gemm, attention, other), MEASURED in the worker by torch.profiler."""

    classes: dict[str, ClassWork]
    compute_flops_by_dtype: dict[str, int] = Field(default_factory=dict,
                                                   description="gemm and attention flops by the dtype of their first operand.")
    parameter_bytes: int | None = Field(None, description="The model's parameters (its `model` attribute); None without one.")
    device_timed: bool = Field(description="time_s is device kernel time (a GPU), not operator self time on the host.")

    def compute(self) -> ClassWork:
        """gemm and attention together: the work proof of work compares."""
        parts = [self.classes[c] for c in ("gemm", "attention") if c in self.classes]
        return ClassWork(ops=sum(p.ops for p in parts), flops=sum(p.flops for p in parts), bytes_moved=sum(p.bytes_moved for p in parts),
                         time_s=sum(p.time_s for p in parts))


class StepRoof(BaseModel):
    """The least time a step doing the baseline's work can take: its gemm and attention flops at the compute ceilings
    and its parameters read once at the memory ceiling, the larger of the two, times `slack`. None where no ceiling
    is known (`note` says so)."""

    roof_s: float | None
    compute_s: float | None = None
    memory_s: float | None = None
    slack: float
    tag: str | None = Field(None, description="MEASURED where a measured ceiling set it, else ASSUMED (datasheet).")
    source: str
    note: str = Field(description="The roof as a reader checks it, or why there is none.")


class CandidateResult(BaseModel):
    levers: list[str]
    verdict: Verdict
    reason: str
    speedup: float | None = Field(None, description="Median over the interleaved pairs of baseline leg / candidate leg, in this call.")
    speedup_ci95: list[float] | None = Field(None, description="[low, high] of the per-pair ratios' median.")
    pairs: int = 0
    candidate_faster: int = Field(0, description="Pairs in which the candidate was faster.")
    sign_test_p: float | None = None
    non_overlap: bool = Field(False, description="The candidate's slowest leg beat the baseline's fastest.")
    baseline_legs_s: list[float] = Field(default_factory=list, description="The reference's legs: seconds a step, its timed windows' mean "
                                         "(device time on a GPU, else the window's wall clock; inputs(seed) and the host copy of the "
                                         "outputs outside).")
    candidate_legs_s: list[float] = Field(default_factory=list, description="The candidate's legs, as baseline_legs_s.")
    device_step_s: float | None = Field(None, description="Median device time per step (events around step() and outputs()), GPU only.")
    baseline_device_step_s: float | None = Field(None, description="The reference's median device time per step over its paired legs, GPU "
                                                 "only: beside baseline_legs_s, whether a slow reference was slow on the device or on the "
                                                 "host.")
    warmup_s: float | None = Field(None, description="The candidate's warm-up steps, compile included.")
    engagement: list[Engagement] = Field(default_factory=list)
    outputs: list[OutputCheck] = Field(default_factory=list)
    inputs_fresh: bool | None = Field(None, description="Timed on fresh seeded inputs; False: fixed, memoization not excluded.")
    worker_legs_s: list[float] = Field(default_factory=list, description="The candidate's legs on its worker's wall clock (its windows), "
                                       "beside candidate_legs_s: on a GPU, what the host saw of the device time.")
    baseline_wall_legs_s: list[float] = Field(default_factory=list,
                                              description="The reference's legs on its worker's wall clock, as worker_legs_s.")
    inputs_step_s: float | None = Field(None,
                                        description="The candidate's inputs(seed) a step (median over its legs), outside the timed window.")
    baseline_inputs_step_s: float | None = Field(None,
                                                 description="The reference's inputs(seed) a step on the same seeds, as inputs_step_s.")
    gate_s: float | None = Field(None, description="Seconds the controller spent judging rather than timing: output compares, continuation "
                                 "scoring, tamper checks, the proof-of-work profile (time.perf_counter around those calls).")
    gate_parts_s: dict[str, float] = Field(default_factory=dict, description="gate_s by part: outputs (the first check, teacher forcing "
                                           "included), continuation (a parting's tokens scored), profile (the proof-of-work step), pairs "
                                           "(each pair's outputs).")
    trial_s: float | None = Field(None, description="Seconds its whole trial took on the controller's clock (build, warm-up, judging, both "
                                  "workers' legs): the device time this candidate cost, of which gate_s is a share.")
    work: StepWork | None = Field(None, description="The candidate's profiled step's work (proof of work).")
    worker_turn: int = Field(1, description="The candidate's turn in its worker: 1 when the workload was built for it, n when a kept "
                             "worker served it a fresh copy of the workload as built after n - 1 other candidates "
                             "(tools/workload/spare.py).")


class WorkloadBenchResult(BaseModel):
    ok: bool
    summary: str
    name: str
    baseline: SampleStats | None = Field(description="The baseline's step time over legs (seconds), measured in this call: its timed "
                                         "windows (step() and outputs(); device time on a GPU), inputs(seed) and the outputs' host copy "
                                         "outside.")
    baseline_device_step_s: float | None = None
    baseline_inputs_step_s: float | None = Field(None,
                                                 description="The baseline's inputs(seed) a step, outside its timed window (None: fixed "
                                                             "inputs).")
    baseline_wall_step_s: float | None = Field(None, description="The baseline's window on its worker's wall clock, a step.")
    figure: str = Field("wall", description="What the step figures are: device (events on the step's stream), wall (the window's wall "
                        "clock), or why the wall clock stood for the device time.")
    same_work: CandidateResult | None = Field(None,
                                              description="A/A: the baseline's own work in a second worker; its gap widens the noise band.")
    noise_band: float | None = Field(None, description="The band a gain had to clear in this call, after the A/A.")
    baseline_work: StepWork | None = Field(None, description="The baseline's profiled step: work by op class.")
    roof: StepRoof | None = Field(None, description="The baseline step's roof: a candidate timed below it is IMPOSSIBLE.")
    candidates: list[CandidateResult]
    warnings: list[str]
    report_md: str
    result_json: str
    plot: str | None
    vendor: str
    evidence: Evidence


IntegrateVerdict = Literal["KEEP", "REVERT", "NOT_ENGAGED", "CRASH", "TIMEOUT", "RAISED"]


class IntegrateRequest(Request):
    name: str = Field(max_length=80, description="A frozen workload session.")
    kernel: str = Field(max_length=300, description="Library kernel name, or a folder NAME/ with NAME.py.")
    replace: str = Field(max_length=300, description="module:Class.method it replaces.")
    adapter: str | None = Field(None, max_length=40, description="rmsnorm, silu_and_mul or layernorm; default the kernel.")
    params: dict[str, str | int] = Field(default_factory=dict, max_length=32, description="A tune winner's params.")
    with_levers: list[str] = Field(default_factory=list, max_length=8, description="Levers it joins.")
    pairs: int = Field(6, ge=5, le=200, description="A/B pairs.")
    steps_per_leg: int = Field(3, ge=1, le=1000, description="Steps per leg.")
    timeout_s: float = Field(900.0, gt=0, le=7200, description="Limit per worker call.")


class IntegrateResult(BaseModel):
    ok: bool
    verdict: IntegrateVerdict
    summary: str
    kernel: str
    replace: str
    params: dict[str, str | int]
    overrides: str = Field(description="The overrides module written: import it before the model is built to reproduce (lever "
                                       "overrides:PATH).")
    calls_per_step: int | None = Field(None, description="The kernel's calls in one step (0: not engaged).")
    wrapper_us_per_call: float | None = Field(None, description="The counting wrapper's own cost per call, measured in the worker.")
    wrapper_share: float | None = Field(None, description="That cost times calls per step, as a share of the candidate's step.")
    kernel_sha256: str = Field(description="sha256 of the kernel's launcher source.")
    bench: WorkloadBenchResult
    evidence: Evidence
