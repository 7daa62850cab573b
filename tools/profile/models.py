"""Request and result models of profile."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from hyperloom.core.evidence import Evidence, Tag
from hyperloom.core.requests import Request
from hyperloom.tools.roofline.models import Ceiling

KernelClass = Literal["gemm", "attention", "normalization", "elementwise", "reduction", "communication", "memory copy", "other"]
TraceTool = Literal["torch.profiler", "rocprofv3"]


class ProfileRequest(Request):

    workload: str | None = Field(None, description="A script or module:function.")
    args: list[str] = Field(default_factory=list, max_length=256, description="Its arguments.")
    trace: str | None = Field(None, description="A torch.profiler or rocprofv3 trace.")
    steps: int = Field(3, ge=1, le=1000, description="Steps recorded.")
    warmup_steps: int = Field(1, ge=0, le=1000, description="Unrecorded steps first.")
    timeout_s: float = Field(600.0, gt=0, le=86400, description="Worker limit.")
    roofline: str | None = Field(None, description="A roofline.json.")
    roof_target: str | None = Field(None, description="Measure the roof here.")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="Output folder name.")
    top: int = Field(15, ge=1, le=500, description="Rows per ranked table.")
    plot: bool = Field(True, description="Write PNG and SVG plots.")
    bytes_per_replay: int | None = Field(None, ge=1, le=10**15,
                                         description="Bytes one replay of the step's graph must move (a decode token: "
                                         "the weights plus the KV cache read once): sets the replay roof at the memory ceiling.")

    @model_validator(mode="after")
    def _one_source(self) -> ProfileRequest:
        if (self.workload is None) == (self.trace is None):
            raise ValueError("give exactly one of workload (a script or module:function to run) and trace (a file to read):"
                             " workload='train.py' profiles a run, trace='trace.json' analyses one")
        if self.roofline is not None and self.roof_target is not None:
            raise ValueError("give roofline (a file) or roof_target (measure now), not both")
        return self


class ClassShare(BaseModel):
    kernel_class: KernelClass
    count: int
    total_s: float
    percent_of_device_time: float


class KernelGroup(BaseModel):
    name: str = Field(description="The kernel's name as the trace spells it.")
    kernel_class: KernelClass
    count: int
    total_s: float
    percent_of_device_time: float = Field(description="total_s as a percent of all kernel, copy and set time in the trace.")
    mean_s: float
    min_s: float
    max_s: float
    launch_shapes: list[str] = Field(description="grid x block of its launches, most frequent first, with their counts (where the trace "
                                                 "records them).")
    ops: list[str] = Field(description="The framework ops that launched it (innermost op, by correlation), most time first.")


class Hotspot(BaseModel):
    rank: int
    label: str = Field(description="The op with its input shapes and dtypes, or the kernel name where no op is linked.")
    kernel_class: KernelClass
    op: str | None = Field(description="The framework op that launched the kernels; null where the trace links none.")
    input_dims: list[list[int] | None] | None = Field(description="The op's input shapes (null entries: non-tensor arguments).")
    input_types: list[str] | None = Field(description="The op's input dtypes as torch.profiler records them.")
    kernels: list[str] = Field(description="The kernels it launched, most time first.")
    calls: int
    total_s: float
    percent_of_device_time: float
    mean_s: float
    bytes_per_call: int | None = Field(description="Bytes moved per call by the model named in work_model; null where no model applies.")
    flops_per_call: int | None
    achieved_gbps: float | None
    achieved_tflops: float | None
    arithmetic_intensity: float | None = Field(description="flops per byte.")
    roof: str | None = Field(description="The ceiling that bounds it at its intensity (a roofline microbenchmark or a datasheet peak).")
    attainable: float | None = Field(description="The roof at its intensity, in roof_unit.")
    roof_unit: Literal["GB/s", "TFLOP/s"] | None
    percent_of_roof: float | None
    bound: Literal["memory", "compute"] | None
    roof_tag: Tag | None = Field(description="MEASURED when the roof came from roofline on this device; ASSUMED for a datasheet peak.")
    headroom_s: float | None = Field(description="total_s x (1 - percent_of_roof/100): time a kernel at the roof would save; null "
                                                 "without a roof.")
    score_s: float = Field(description="The ranking key: headroom_s, or total_s where the headroom is unknown (an upper bound).")
    work_model: str = Field(description="How bytes and flops were counted, or why they were not.")


class LibraryArg(BaseModel):
    name: str = Field(description="The library spec's argument.")
    source: str = Field(description="Where the recorded chain has it (op number, which operand), or how its value was chosen.")
    dims: list[int] | None = None
    dtype: str | None = None
    value: float | int | None = None
    tag: Tag = Field(description="MEASURED: recorded in the trace; ASSUMED: not recorded (eps), a stated default.")


class LibraryMatch(BaseModel):
    kernel: str = Field(description="The library kernel the whole chain is.")
    spec_folder: str = Field(description="Its spec folder among the shipped kernels (kernels/triton/<kernel>; "
                                         "hyperloom/kernels/... installed).")
    entry: str
    launcher: str = Field(description="file:function taking torch tensors, for putting the kernel into the model.")
    pattern: str = Field(description="What the chain was read as.")
    dtype: str = Field(description="The dtype the chain's input has.")
    shape: dict[str, int] = Field(description="The spec's shape variables at the recorded shapes.")
    args: list[LibraryArg]
    notes: list[str]


class FusionCandidate(BaseModel):
    ops: list[str] = Field(description="The chain: memory-bound ops back to back on one stream, each reading what the one before wrote.")
    shapes: list[str] = Field(description="Each op's output shape and dtype.")
    before: str | None = Field(description="The compute op (GEMM, attention) right before the chain, or null.")
    after: str | None = Field(description="The compute op right after the chain, or null.")
    occurrences: int = Field(description="How often the same chain (ops and shapes) ran in the profiled steps.")
    kernels_per_occurrence: int
    time_s: float = Field(description="The chain's kernel time over all occurrences.")
    bytes_moved_per_occurrence: int
    bytes_saved_per_occurrence: int = Field(description="2 x the bytes of each intermediate tensor: written by one kernel and read back by "
                                                        "the next; one fused kernel keeps them on chip.")
    bytes_saved_total: int
    estimated_time_saved_s: float = Field(description="time_s x bytes_saved / bytes_moved: the chain's time scaled to the bytes a fusion "
                                                      "removes (ASSUMED model; launch gaps not counted).")
    steps_over: list[str] = Field(default_factory=list, description=(
        "Compute ops the chain steps over: they read nothing it wrote and the op after them reads both (the gated MLP's up projection)."))
    library: LibraryMatch | None = Field(None, description="The fusion library kernel the whole chain is, with each argument traced "
                                                           "to the chain.")
    library_note: str | None = Field(None, description="Why the closest library kernel does not fit, where one came near.")


class Handoff(BaseModel):
    kind: Literal["hotspot", "fusion"] = Field(description="A hotspot's op, or a fusion candidate's chain.")
    rank: int = Field(description="The hotspot's rank, or the first fusion candidate's (1-based, in fusion's order).")
    ranks: list[int] = Field(default_factory=list,
                             description="Every fusion candidate the draft covers (the same library kernel at other shapes).")
    label: str
    ops: list[str] = Field(description="The recorded aten ops, in order.")
    kernel: str = Field(description="A hotspot's kernel taking most of its time; a chain's library kernel, or empty.")
    library: str | None = Field(None, description="The fusion library kernel the draft uses (source, entry, tuning space), or null.")
    folder: str = Field(description="The draft folder, relative to the workspace: kernel.yaml, reference.py, handoff.json (and the "
                                    "library source).")
    spec: str = Field(description="Its kernel.yaml, for spec_check.")
    todos: list[str] = Field(description="What is left to fill in before spec_check is ok; empty for a library kernel.")
    shapes: list[dict[str, int]] = Field(description="The spec's shapes: the recorded ones.")
    dtype: str = Field(description="The output's dtype.")
    tolerance: dict[str, float | int | str | None] = Field(description="The suggested tolerance (ASSUMED) and why.")
    metric: dict[str, int | str] = Field(description="bytes and flops per launch, for the spec's metric.")
    module: str | None = Field(None, description="What integrate replaces: the module's forward the trace's Python stack names, or "
                                                 "null (see ops).")
    launcher: str | None = Field(None, description="The library's file:function taking torch tensors, inside the draft folder.")
    notes: list[str] = Field(default_factory=list)


class DeviceBusy(BaseModel):
    device: str
    kernel_time_s: float = Field(description="Sum of kernel, copy and set durations on this device.")
    busy_s: float = Field(description="Time at least one of them ran (overlaps across streams counted once).")
    busy_percent: float = Field(description="busy_s as a percent of the profiled window.")


class ReplayRoof(BaseModel):
    """The bytes one replay must move (a token: the weights and the cache read once) and the bandwidth it moves them at."""

    bytes_per_replay: int = Field(ge=0,
                                  description="Bytes one replay reads at least (a decode token: the weights plus the KV cache read once).")
    bandwidth_gb_s: float = Field(gt=0, description="The memory bandwidth, GB/s.")
    source: str = Field(description="Where both came from, MEASURED or ASSUMED (a roofline run, a datasheet, the workload's "
                                    "parameter bytes).")

    def roof_us(self) -> float:
        return self.bytes_per_replay / (self.bandwidth_gb_s * 1e9) * 1e6

    def describe(self) -> str:
        return f"{self.bytes_per_replay / 1e6:.1f} MB at {self.bandwidth_gb_s:.0f} GB/s ({self.source})"


class ReplayKernel(BaseModel):
    name: str
    us: float = Field(description="Its time in the mean replay (summed over its calls there), microseconds.")
    count: float = Field(description="Its calls in the mean replay.")
    share_of_period: float = Field(description="us as a share of the replay period.")
    bytes: int | None = Field(None,
                              description="The bytes it reads in one replay where its route counted them (a GEMV's weights), else None.")

    def gb_s(self) -> float | None:
        """The bandwidth it reads its bytes at in one replay (its bytes over its time), GB/s."""
        return self.bytes / (self.us * 1e3) if self.bytes and self.us > 0 else None


class ReplayAttribution(BaseModel):
    """A replayed graph's period (a decode token's time) split into its parts, MEASURED from the trace (replays.py)."""

    replays: int = Field(description="Launches of the most launched graph in the trace.")
    kernels_per_replay: int
    period_us: float = Field(description="Median time from one replay's first kernel to the next one's.")
    graph_busy_us: float = Field(description="Median time the graph's own kernels ran in one replay.")
    graph_gaps_us: float = Field(description="Median idle time between the graph's kernels, inside one replay.")
    outside_kernels_us: float = Field(description="Median time of kernels and copies launched outside the graph between two replays.")
    outside_kernels_per_period: float
    idle_us: float = Field(description="The rest of the period: the device idle between replays while the host works.")
    classes_us: dict[str, float] = Field(description="The graph's kernel time in the mean replay by class (gemm, attention, "
                                                     "normalization, ...).")
    kernels: list[ReplayKernel] = Field(description="The graph's kernels by time in one replay, most first.")
    roof: ReplayRoof | None = None
    roof_percent: float | None = Field(None, description="The roof's time for one replay as a percent of the period.")
    findings: list[str] = Field(default_factory=list)


class ProfileResult(BaseModel):
    summary: str
    tool: TraceTool = Field(description="Which profiler wrote the trace.")
    trace: str = Field(description="The trace analysed, relative to the workspace.")
    device: str = Field(description="The GPU the trace names, or the host CPU for a CPU-only run.")
    gpu: bool = Field(description="Whether the trace has GPU kernels; false: CPU operators were analysed instead.")
    window_s: float = Field(description="The profiled window: the recorded steps, or first to last event.")
    device_time_s: float = Field(description="Sum of every kernel, copy and set duration (GPU), or of every operator's self "
                                             "time (CPU-only).")
    kernel_count: int
    busy_percent: float | None = Field(description="Percent of the window the busiest GPU ran something; null for CPU-only.")
    idle_percent: float | None
    launch_bound: bool = Field(description="The GPU idles most of the window between short kernels: the host's launch path limits the run.")
    devices: list[DeviceBusy]
    profiler_device_time_s: float | None = Field(description="torch.profiler's own key_averages total of device self time, for a captured "
                                                             "workload; null for a trace file.")
    steps: int | None
    step_wall_s: list[float] = Field(description="Wall time of each recorded step under the profiler (captured workloads).")
    classes: list[ClassShare]
    kernels: list[KernelGroup] = Field(description="Kernels grouped by name, most time first (the top `top`).")
    kernel_groups: int = Field(description="How many distinct kernels the trace has.")
    hotspots: list[Hotspot] = Field(description="Ops (or unlinked kernels) ranked by score_s.")
    fusion: list[FusionCandidate] = Field(description="Chains of memory-bound ops, most bytes saved first.")
    handoff: list[Handoff] = Field(description="Draft spec folders for the top hotspots and fusion candidates (library kernels where a "
                                               "chain matches).")
    replays: ReplayAttribution | None = Field(None, description="A graph replayed many times (a decode loop's token): each replay's period "
                                                                "split into its parts; null without one.")
    roofs: list[Ceiling] = Field(description="The ceilings hotspots were placed under.")
    roof_source: str = Field(description="Where the roofs came from: a roofline file, a roofline run, a datasheet (ASSUMED), or none.")
    findings: list[str] = Field(description="What a reader must know: CPU-only runs, launch-bound runs, missing links, ASSUMED roofs, "
                                            "skipped plots.")
    files: list[str] = Field(description="report.md, profile.json, the trace, plots and stubs, relative to the workspace.")
    evidence: Evidence
