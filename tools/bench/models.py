"""Request and result models of bench."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence
from hyperloom.tools.pipeline.models import InputSetVerdict
from hyperloom.tools.pipeline.stats import SampleStats
from hyperloom.tools.runtime.models import FLUSH_MODE_DESCRIPTION, FlushMode
from hyperloom.tools.smi.readings import DeviceState


class BenchRequest(Request):

    spec: str = Field(min_length=1, description="kernel.yaml or its folder.")
    variant: str | None = Field(None, description="Spec variant.")
    shape: int = Field(0, ge=0, le=1000, description="Shape index.")
    target: str = Field("sm_90", description="gfx (hip), sm_XX (cuda) or host (c).")
    device: int = Field(0, ge=0, le=63, description="GPU index.")
    params: dict[str, str | int] = Field(
        default_factory=dict, max_length=64,
        description="Tuning values.",
    )
    adversarial: bool = Field(True, description="Gate adversarial sets too.")
    warmup_s: float = Field(0.1, ge=0, le=60, description="Warm-up time.")
    min_reps: int = Field(20, ge=6, le=100000, description="Fewest reps.")
    max_reps: int = Field(2000, ge=6, le=1000000, description="Most reps.")
    max_time_s: float = Field(10.0, gt=0, le=600, description="Sampling time limit.")
    target_ci: float = Field(0.01, gt=0, le=1, description="Median's 95 % CI.")
    flush_mode: FlushMode = Field("write", description=FLUSH_MODE_DESCRIPTION)
    flush_cache: bool = Field(True, description="Flush LLC.")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="Per worker.")


class BenchCommandRequest(Request):
    command: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(min_length=1, max_length=64, description=(
        "Program and arguments (no shell)."))
    target: str = Field("host", max_length=64, description="What it ran on, for the evidence.")
    timeout_s: float = Field(120.0, gt=0, le=600, description="Limit; its process group is killed.")


class BenchResult(BaseModel):
    ok: bool = Field(description="True when every input set passed the gate and timing completed.")
    summary: str
    name: str
    variant: str | None
    target: str
    backend: str
    device: str
    shape: dict[str, int]
    params: dict[str, str | int] = Field(default_factory=dict, description="The tuning parameters this run used.")
    gate: list[InputSetVerdict]
    checks: list[InputSetVerdict] = Field(default_factory=list, description=(
        "What the timing ran, judged: guards, the last timed launch and a launch on fresh secret inputs, determinism, the roof."))
    kernel: SampleStats | None = Field(description=(
        "Kernel-only time per launch: on GPUs, device events enqueued with the launch behind the cache flush, so the host's"
        " launch latency is outside them; the host timer on the c backend."))
    wall: SampleStats | None = Field(description="Host wall-clock per launch, launch overhead included.")
    kernel_to_wall: float | None = Field(description="Median kernel time / median wall time: near 1 for long kernels.")
    bytes_moved: int | None
    flops: int | None
    bandwidth_gbps: float | None = Field(description="bytes_moved / median kernel time, in GB/s (1e9).")
    tflops: float | None
    flush_bytes: int
    flush_mode: FlushMode = Field("write", description="How the cache was flushed before each repetition (when flush_bytes > 0).")
    cache_bytes: int
    late_reps: int = Field(0, description=(
        "GPU: repetitions the host took longer to enqueue (start event, launch) than 0.8 of the flush and spin before them"
        " last; the kernel is timed behind them, so these may include host launch latency. Nonzero: a quieter host."))
    state_before: DeviceState | None
    state_after: DeviceState | None
    artifacts: str | None = Field(description="Folder in the workspace with inputs, outputs, references and raw samples.")
    evidence: Evidence
