"""Request and result models of tune_start, tune_status, tune_propose, tune_stop and tune_report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from hyperloom.core.requests import Request
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.triton.models import AutotuneChoice
from hyperloom.tools.runtime.models import FLUSH_MODE_DESCRIPTION, FlushMode, Timing
from hyperloom.tools.runtime.pool import WorkerMode
from hyperloom.tools.tune.space import check_params

Strategy = Literal["grid", "random", "tpe", "cmaes", "external"]
TrialStatus = Literal["PASSED", "COMPILE_ERROR", "RESOURCE_LIMIT", "RULE_FAILED", "TIMEOUT", "CRASH", "NAN", "WRONG",
                      "NONDETERMINISTIC", "OUT_OF_BOUNDS", "IMPOSSIBLE", "DEGENERATE", "ERROR"]
SessionState = Literal["running", "stopped", "closed", "not running"]


class TuneRequest(Request):

    spec: str = Field(description="kernel.yaml or its folder.")
    variant: str | None = Field(None, description="Baseline variant.")
    search_variants: list[str] = Field(default_factory=list, max_length=32, description="More variants.")
    warm_start: list[dict[str, str | int]] = Field(default_factory=list, max_length=64, description="Candidates run first.")
    target: str = Field("host", description="gfx, sm_XX or host.")
    shape: int = Field(0, ge=0, le=1000, description="Shape index.")
    session: str | None = Field(None, max_length=120, description="Name or folder; existing resumes.")
    strategy: Strategy = Field("grid", description="external: proposals only.")
    seed: int = Field(0, ge=0, description="Seed.")
    max_candidates: int = Field(64, ge=1, le=100000, description="Most candidates.")
    budget_device_s: float = Field(3600.0, gt=0, le=30 * 86400, description="Device-seconds budget.")
    patience: int | None = Field(None, ge=1, le=100000, description="Passes without an epsilon gain.")
    epsilon: float = Field(0.01, ge=0, le=1, description="Smallest gain.")
    deadline_s: float | None = Field(None, gt=0, le=30 * 86400, description="Wall-clock limit.")
    roof_gbps: float | None = Field(None, gt=0, description="Bandwidth roof.")
    roof_tflops: float | None = Field(None, gt=0, description="Compute roof.")
    target_roof_pct: float | None = Field(None, gt=0, le=100, description="Stop at % of roof.")
    workers: int = Field(1, ge=1, le=64, description="CPU workers.")
    devices: list[int] | None = Field(None, max_length=64, description="GPUs; default idle.")
    worker_mode: WorkerMode = Field("warm", description="fresh: a process per launch.")
    compile_ahead: int | None = Field(None, ge=0, le=64, description="Compiled ahead.")
    recycle_after: int = Field(256, ge=1, le=1_000_000, description="Launches per worker.")
    expect: list[str] = Field(default_factory=list, max_length=64, description="Must-match rules.")
    forbid: list[str] = Field(default_factory=list, max_length=64, description="Must-not rules.")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="Per launch.")
    min_reps: int = Field(10, ge=6, le=100000, description="Fewest reps.")
    max_reps: int = Field(200, ge=6, le=1000000, description="Most reps.")
    max_time_s: float = Field(2.0, gt=0, le=600, description="Timing per candidate.")
    target_ci: float = Field(0.02, gt=0, le=1, description="Median's 95 % CI.")
    warmup_s: float = Field(0.05, ge=0, le=60, description="Warm-up.")
    flush_cache: bool = Field(True, description="Flush LLC.")
    flush_mode: FlushMode = Field("write", description=FLUSH_MODE_DESCRIPTION)
    revalidate_pairs: int = Field(5, ge=0, le=100, description="Winner re-time pairs.")
    sweep_shapes: bool = Field(True, description="Sweep every shape.")
    sweep_pairs: int = Field(5, ge=1, le=100, description="Sweep pairs.")
    storage: str | None = Field(None, max_length=500, description="Optuna RDB URL.")
    study: str | None = Field(None, max_length=200, description="Optuna study.")
    background: bool = Field(True, description="Return at once.")

    @field_validator("warm_start")
    @classmethod
    def _plain_params(cls, candidates: list[dict[str, str | int]]) -> list[dict[str, str | int]]:
        try:
            return [check_params(params) for params in candidates]
        except HyperloomError as exc:  # pydantic reports a ValueError as this field's validation error
            raise ValueError(str(exc)) from exc

    @model_validator(mode="after")
    def _storage_needs_optuna(self) -> TuneRequest:
        if self.storage is not None and self.strategy not in ("tpe", "cmaes"):
            raise ValueError("storage is only used by the tpe and cmaes strategies; pass strategy tpe or cmaes, or drop storage")
        return self

    def timing(self) -> Timing:
        """How each passing candidate is timed."""
        return Timing(warmup_s=self.warmup_s, min_reps=self.min_reps, max_reps=max(self.max_reps, self.min_reps),
                      max_time_s=self.max_time_s, target_ci=self.target_ci, flush_cache=self.flush_cache, flush_mode=self.flush_mode)


class TrialRecord(BaseModel):
    seq: int
    hash: str = Field(description="Content hash: source, spec, variant, target, shape and defines.")
    params: dict[str, str | int]
    proposer: str
    status: TrialStatus
    reason: str = Field(description="Why it was rejected ('' when it passed), naming the input set for a tolerance miss.")
    input_set: str | None = Field(description="The input set or step it failed on.")
    median_s: float | None
    ci_halfwidth_s: float | None = None
    bandwidth_gbps: float | None
    tflops: float | None
    roof_pct: float | None
    speedup: float | None = Field(description="Baseline median / this median.")
    device: str
    device_index: int | None = Field(None,
                                     description="The GPU index that ran it (None: a CPU worker, or a session older than device indices).")
    worker: int
    device_s: float = Field(description="Seconds the worker processes ran for this candidate.")
    compile_s: float
    finished_at: str
    build_sha256: str | None = Field(None, description="Its code object and launch, hashed (what novelty is judged by).")
    phases_s: dict[str, float] = Field(default_factory=dict, description=(
        "Where this candidate's time went, in seconds (they add up to its own wall time): compile, rules (disasm), process_start (worker"
        " start-up and hand-over), stage (driver, code object, inputs in), gate (the kernel on each input set; a GPU's outputs checked "
        "there), compare (host outputs against references), time (the timing loop, its helpers found), other (scratch folders). "
        "process_start + stage + gate + compare + time = device_s."))


class TuneStatus(BaseModel):
    session: str = Field(description="The session id (its folder under the workspace).")
    folder: str
    state: SessionState
    summary: str
    recorded: int = Field(description="Candidates recorded in the ledger.")
    passed: int
    rejected: int
    pending_proposals: int
    best: TrialRecord | None
    baseline: TrialRecord | None
    budget_device_s: float
    spent_device_s: float
    budget_left_s: float
    stop_reason: str | None
    error: str | None = Field(None, description="Why a background run ended with an error, if it did.")


class SessionRef(Request):

    session: str = Field(max_length=300, description="Session id or folder.")


class ProposeRequest(Request):

    session: str = Field(max_length=300, description="Session id.")
    params: dict[str, str | int] = Field(default_factory=dict, max_length=64, description="Defines; {\"variant\": name} picks one.")
    source: str | None = Field(None, max_length=500, description="A kernel source file.")
    diff: str | None = Field(None, max_length=200_000, description="Or a diff of the parent's.")
    parent: str | None = Field(None, max_length=64, description="Parent hash.")
    note: str = Field("", max_length=500, description="Why.")

    @model_validator(mode="after")
    def _something(self) -> ProposeRequest:
        if not self.params and self.source is None and self.diff is None:
            raise ValueError("propose params, a source file or a diff")
        return self


class ProposeResult(BaseModel):
    accepted: bool
    hash: str
    summary: str


class ShapeSweep(BaseModel):
    shape: dict[str, int]
    device: str = Field("", description="Where it ran: 'gpu N (name)' or 'cpu'.")
    baseline_s: float | None = Field(description="Median of the baseline's runs at this shape.")
    winner_s: float | None = Field(description="Median of the winner's runs at this shape.")
    speedup: float | None
    pairs: int = Field(0, description="Interleaved (baseline, winner) pairs timed.")
    winner_slower: int = Field(0, description="Pairs in which the winner was slower.")
    slower_p: float | None = Field(None, description="One-sided sign-test p-value that the winner is not slower (the weaker round's, "
                                                     "when re-timed).")
    regression: bool = Field(description=(
        "The winner fails the gate where the baseline passes, or is slower beyond noise: slower in enough pairs for p < 0.05 and by more "
        "than 2 % at the median, in the first round of pairs and again in a second round of fresh pairs."))
    note: str = ""


class Revalidation(BaseModel):
    device: str = Field("", description="Where it ran: 'gpu N (name)' or 'cpu'.")
    pairs: int
    baseline_s: list[float]
    winner_s: list[float]
    speedup: float | None = Field(description="Median baseline time / median winner time over the interleaved runs.")
    winner_faster: int = Field(description="Pairs in which the winner was faster.")
    sign_test_p: float | None = Field(description="One-sided sign-test p-value that the winner is not faster.")
    beyond_noise: bool


class LineageNode(BaseModel):
    """A source change in the session's lineage: its candidate's result and its measured gain over its parent and the baseline."""

    hash: str
    parent: str
    kind: Literal["source", "diff"]
    note: str
    source: str
    seq: int | None = Field(None, description="The trial it became (None: not run yet, or not new).")
    status: str = Field(description="The trial's status, 'queued', or 'NOT_NEW'.")
    median_s: float | None = None
    gain_over_parent: float | None = Field(None, description="Parent median / this median, both measured in this session.")
    gain_over_baseline: float | None = None
    same_as: str | None = Field(None, description="NOT_NEW: the candidate whose code object it builds to.")


class TuneReport(BaseModel):
    status: TuneStatus
    leaderboard: list[TrialRecord]
    rejected: list[TrialRecord]
    revalidation: Revalidation | None = Field(description="The first device's re-validation (revalidations has every device's).")
    revalidations: list[Revalidation] = Field(default_factory=list,
                                              description="Winner and baseline re-timed on each device the session used.")
    sweep: list[ShapeSweep]
    autotune: AutotuneChoice | None = Field(None, description="Triton kernels: the config the kernel's own @triton.autotune picked on this "
                                                              "device, gated and timed as a candidate, beside the winner.")
    lineage: list[LineageNode] = Field(default_factory=list,
                                       description="Source changes proposed, each under its parent (propose with source or diff).")
    report_md: str = Field(description="Path of report.md in the workspace.")
    breakdown_json: str = Field(description="Path of breakdown.json in the workspace.")
