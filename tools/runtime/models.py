"""What a worker process is asked to do, and what it reports back (JSON files between processes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.tools.gate.models import GateResult, OutputGate, Tolerance

Backend = Literal["cuda", "hip", "c", "triton_interpreter"]
HOST_BACKENDS: tuple[Backend, ...] = ("c", "triton_interpreter")  # run on CPU workers, not on a GPU
Status = Literal["OK", "TIMEOUT", "CRASH", "ERROR"]
FlushMode = Literal["write", "read"]
GUARD_BYTES = 4096
GUARD_BYTE = 0xA5
FLUSH_MODE_DESCRIPTION = "write: dirty lines; read: clean."


class ArgSpec(BaseModel):
    name: str
    kind: Literal["buffer", "scalar"]
    dtype: str
    nbytes: int = 0
    role: Literal["input", "output", "inout", "scratch", "scalar"] = "scalar"
    input_path: str | None = Field(None, description=".npy to copy in before the launch.")
    output_path: str | None = Field(None, description=".npy to write the buffer to after the launch.")
    shape: list[int] = Field(default_factory=list)
    value: float | int | None = None


class Timing(BaseModel):
    warmup_s: float = Field(0.1, ge=0, description="Warm-up time budget before any sample is kept.")
    min_reps: int = Field(20, ge=1)
    max_reps: int = Field(2000, ge=1)
    max_time_s: float = Field(10.0, gt=0, description="Stop sampling after this long, CI or not.")
    target_ci: float = Field(0.01, gt=0, description="Stop when the median's 95 % CI half-width is within this fraction.")
    flush_cache: bool = True
    flush_mode: FlushMode = Field("write", description="write: fill the flush buffer (dirty lines); read: read it (clean lines).")


class TimedChecks(BaseModel):
    """What a timing trial does besides timing, so that the launches it times are gated (tools/pipeline/secret.py): the
    last timed launch's outputs (poisoned before it) kept, then one more launch on the same inputs (determinism), then
    one on a second input set, its outputs not poisoned first."""

    fresh_inputs: dict[str, str] = Field(description="Per input argument: the .npy of the second input set.")
    outputs: str = Field(description="Folder for last_, again_ and fresh_<arg>.npy (when the caller judges them).")
    determinism: Tolerance | None = Field(None, description="The tolerance two launches on the same inputs must agree within; None: "
                                                            "not compared (a kernel declared nondeterministic).")
    last_gate: OutputGate | None = Field(None, description="GPU: judge the last timed launch's outputs here, against these references.")
    fresh_gate: OutputGate | None = Field(None, description="GPU: judge the launch on fresh inputs here.")


class TrialRequest(BaseModel):
    backend: Backend
    device_index: int = 0
    code_object: str
    entry: str
    args: list[ArgSpec]
    grid: list[int] = Field(default_factory=lambda: [1, 1, 1])
    block: list[int] = Field(default_factory=lambda: [1, 1, 1])
    shared_bytes: int = 0
    launch_args: bool = Field(False, description="c backend: also pass grid (x, y, z) and block (x, y, z) as six trailing int32 arguments.")
    mode: Literal["correctness", "timing"]
    timing: Timing = Field(default_factory=Timing)
    timing_code_object: str | None = Field(None, description="GPU: the code object of kernels/runtime/timing.hip (read flush, spin, "
                                                             "checksum): timing needs it; "
                                           "with it a warm worker keeps inputs on the device, checked after each trial.")
    gate: OutputGate | None = Field(None,
                                    description="GPU correctness: compare the outputs in the worker against these frozen references (the "
                                    "result's gate) instead of writing them to their output_path.")
    checks: TimedChecks | None = Field(None, description="Timing: also gate the timed launches (see TimedChecks).")
    guard_bytes: int = Field(GUARD_BYTES, ge=0,
                             description="Bytes of a known pattern before and after every buffer, checked after the trial.")


class TrialResult(BaseModel):
    status: Status
    message: str = ""
    device: str = ""
    kernel_s: list[float] = Field(default_factory=list, description="Per repetition, from device events (host timer on the c backend).")
    wall_s: list[float] = Field(default_factory=list, description="Per repetition, host wall clock around launch and completion.")
    late_reps: int = Field(0, description="GPU: repetitions whose start event and launch took the host longer to enqueue than 0.8 of the "
                                          "flush and spin before them last, "
                                          "so the device may have waited for the launch inside the timed span.")
    warmup_reps: int = 0
    flush_bytes: int = 0
    cache_bytes: int = 0
    stderr: str = ""
    elapsed_s: float = 0.0
    gate: GateResult | None = Field(None, description="The verdict on the outputs, when the request asked the worker for it.")
    timed_gates: dict[str, GateResult] = Field(default_factory=dict, description="GPU timing with checks: 'last', 'fresh' and "
                                                                                 "'determinism' judged in the worker.")
    checked_kernel_s: float | None = Field(None, description="The checked timed launch's own time (with checks; not among kernel_s).")
    guard_violations: list[str] = Field(default_factory=list,
                                        description="Buffers whose guard regions the kernel wrote: it wrote outside them.")
    stage_s: float = Field(0.0, description="Seconds in the worker before the first launch: driver and context, code object, inputs read "
                                            "and copied in.")
