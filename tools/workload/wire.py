"""What crosses between the controller (process.py's WorkloadProcess) and the workload's worker (worker/runner.py): a
request and an answer per worker entry, declared once. Both are plain JSON (Inductor's autotune_process habit: no
tensors, nothing the other process must import to read), so a crash or a lie of the worker is an answer to judge,
never an object the controller trusts. The few names both rooms need live here too."""

from __future__ import annotations

from typing import Any, TypedDict

RUNNER = "hyperloom.tools.workload.worker.runner"  # the worker's entries, called as RUNNER:entry (hyperloom.core.warm)
PROFILER_ENVIRON = {"TEARDOWN_CUPTI": "1"}
"""In every workload worker's environment: without kineto's CUPTI teardown a process profiled once (engagement, proof of
work) stays slower for the rest of its life, both sides of every pair unevenly (docs/decisions.md: The profiler's
teardown in every worker). torch sets it back to 0 where CUPTI cannot be re-initialised beside CUDA graphs."""
# Sibling projections that read the same input, by the names model families give them: attention (Llama, Mistral,
# Qwen, Gemma, OPT, BART, Whisper, CLIP: q/k/v_proj; BERT, RoBERTa, ViT: query/key/value; DistilBERT: q/k/v_lin;
# DeBERTa-v2: query/key/value_proj; T5: q/k/v) and the gated MLP's two input projections (Llama-family gate_proj and
# up_proj; T5 v1.1 and its successors: wi_0 and wi_1). Families that keep them in one layer already (GPT-2's c_attn,
# Falcon's and GPT-NeoX's query_key_value, Phi-3's qkv_proj and gate_up_proj) have nothing to fuse.
PROJECTION_GROUPS: tuple[tuple[str, ...], ...] = (("q_proj", "k_proj", "v_proj"), ("query", "key", "value"), ("q_lin", "k_lin", "v_lin"),
                                                  ("query_proj", "key_proj", "value_proj"), ("q", "k", "v"), ("gate_proj", "up_proj"),
                                                  ("wi_0", "wi_1"))
"""The sibling projections fuse_projections fuses, by the names the model families give them (worker/levers/fused_projections.py),
named by the controller where none was found (checks/engagement.py)."""


class LeverPayload(TypedDict):
    """A lever as the worker applies it (levers.Lever without what only the controller reads)."""

    name: str
    kind: str
    value: str


class TeacherRequest(TypedDict):
    """Tokens to score by teacher forcing: the sequences (rows of ids) and the length of their prompt."""

    ids: list[list[int]]
    prompt: int


class SavedOutput(TypedDict):
    """One output saved as NAME.npy: its shape, the dtype saved and the dtype the step returned."""

    shape: list[int]
    dtype: str
    original_dtype: str


class Empty(TypedDict):
    """The request and the answer of release and ping."""


class BuildRequest(TypedDict):
    """build_guarded: the workload (a factory or a script) with its knobs, the candidate's levers and its folder;
    `keep`: keep the workload as built so that `serve` can give later candidates a fresh copy."""

    workload: str
    kind: str  # "script" or "function"
    args: list[str]
    root: str
    knobs: dict[str, str]
    folder: str
    levers: list[LeverPayload]
    keep: bool


class Built(TypedDict):
    """What build reports: the device and toolchain, the factory's knobs and their defaults, what the workload declares
    (points, tolerances), the model's facts a lever acts on, and whether the workload could be kept for `serve`."""

    vendor: str  # "cpu", "cuda" or "rocm"
    device: str | None
    torch: str | None
    toolchain: dict[str, str]
    knobs: dict[str, list[str] | None]
    knob_defaults: dict[str, str]
    has_outputs: bool
    module_file: str | None
    points: list[Any]
    tolerances: dict[str, dict[str, float]]
    pid: int
    model_facts: dict[str, Any]
    reusable: bool
    not_reusable: str


class BuildAnswer(Built):
    """build_guarded's answer: the build's, whether the workload takes inputs(seed), and what the build replaced on the
    timing path (tamper.py)."""

    has_inputs: bool
    tampered: list[str]


class Info(BuildAnswer, total=False):
    """A worker's build as the controller holds it (WorkloadProcess.info): updated by `serve` and by `outputs`."""

    not_greedy: str | None  # why the step's last generate did not decode greedily (outputs)


class ServeRequest(TypedDict):
    levers: list[LeverPayload]
    folder: str


class ServeAnswer(TypedDict):
    model_facts: dict[str, Any]
    has_inputs: bool
    tampered: list[str]
    pid: int


class WarmupRequest(TypedDict):
    steps: int


class WarmupAnswer(TypedDict):
    wall_s: list[float]
    graph_captured: bool


class _TimeStepsRequest(TypedDict):
    steps: int
    keep_all: bool  # every step's outputs kept on the device for save_timed, else the last's


class TimeStepsRequest(_TimeStepsRequest, total=False):
    seeds: list[int]  # one step per seed, each after inputs(seed); absent: fixed inputs


class TimeStepsAnswer(TypedDict):
    """Each step's window on the worker's clock and in device time (a GPU), step() alone in both, inputs(seed)'s time
    outside the window, the outputs' digests; what inputs(seed) ran; what the candidate replaced on the timing path;
    the worker's account of the whole call."""

    wall_s: list[float]
    step_wall_s: list[float]
    device_s: list[float]
    step_device_s: list[float]
    inputs_s: list[float]
    digests: list[dict[str, float]]
    inputs_calls: list[str]
    tampered: list[str]
    elapsed_s: float


class SaveTimedRequest(TypedDict):
    folder: str
    step: int | None  # of the last leg's kept steps; None: its last


class SaveTimedAnswer(TypedDict):
    outputs: dict[str, SavedOutput]
    tampered: list[str]


class OutputsRequest(TypedDict):
    folder: str
    teacher: dict[str, TeacherRequest]  # tokens name -> the tokens whose logits to save beside them (NAME.teacher)


class _OutputsAnswer(TypedDict):
    outputs: dict[str, SavedOutput]


class OutputsAnswer(_OutputsAnswer, total=False):
    not_greedy: str


class SeededOutputsRequest(TypedDict):
    folder: str
    seeds: list[int]
    teacher_own: dict[str, str]  # tokens name -> its top-k ids' name: its own tokens scored by itself
    teacher: list[dict[str, TeacherRequest] | None] | None  # per seed: another's tokens to score


class SeededOutputsAnswer(TypedDict):
    seeds: int


class ScoreRequest(TypedDict):
    folder: str
    teacher: dict[str, TeacherRequest]
    inputs: str | None  # "built": the tokens came from the workload's inputs as built


class ScoreAnswer(TypedDict):
    scored: list[str]
    eos: list[int]
    pad: int | None


class _TwinAnswer(OutputsAnswer):
    dtype: str


class TwinAnswer(_TwinAnswer, total=False):
    """The twin's outputs, the dtype it ran in, and why it is float32 where a float64 twin raised."""

    twin_note: str


class TraceRequest(TypedDict):
    trace: str
    key_averages: str
    steps: int


class TraceAnswer(TypedDict, total=False):
    """profile's capture report (tools/profile/capture.py's record) of the stack's steps, with the bytes each routed
    kernel reads a step and the decode loop's KV read a replay."""

    torch: str
    cuda: str | None
    hip: str | None
    gpu: bool
    device: str | None
    step_wall_s: list[float]
    warmup_wall_s: list[float]
    profiler_device_time_s: float | None
    copy_gb_s: float
    copy_bytes: int
    copy_skipped: str
    kernel_bytes: dict[str, int]
    kv_read_bytes_per_replay: float


class EngagementRequest(TypedDict, total=False):
    trace: str  # the Chrome trace with shapes written there, the model's parameter bytes reported (proof of work)
    seed: int  # inputs(seed) before the profiled step


class _EngagementAnswer(TypedDict):
    ops: dict[str, int]
    kernels: dict[str, int]
    graph_replayed: bool


class EngagementAnswer(_EngagementAnswer, total=False):
    """What ran in one step profiled as a timed step runs, and what each lever counted of itself."""

    parameter_bytes: int | None
    work: dict[str, Any]  # a StepWork's JSON, where the worker weighed the step
    compiled_graphs: int
    graphs_compiled_in_step: int
    graph_breaks: int
    tunableop_enabled: bool
    tunableop_results: int
    tunableop_files: list[str]
    override_calls: dict[str, int]
    override_kernels: dict[str, list[str]]
    wrapper_overhead_us: float
    decode_loop: dict[str, Any]
    static_cache: dict[str, int]
    channels_last: int
    fused_projections: dict[str, dict[str, int]]
    weight_only: dict[str, int]
    decode_attention: dict[str, Any]  # a kernel route's evidence (worker/levers/kernel_route.py), by lever value
    decode_gemv: dict[str, Any]


ENTRIES: dict[str, tuple[type, type]] = {
    "build_guarded": (BuildRequest, BuildAnswer),
    "serve": (ServeRequest, ServeAnswer),
    "release": (Empty, Empty),
    "warmup": (WarmupRequest, WarmupAnswer),
    "time_steps": (TimeStepsRequest, TimeStepsAnswer),
    "save_timed": (SaveTimedRequest, SaveTimedAnswer),
    "outputs": (OutputsRequest, OutputsAnswer),
    "seeded_outputs": (SeededOutputsRequest, SeededOutputsAnswer),
    "score": (ScoreRequest, ScoreAnswer),
    "twin": (OutputsRequest, TwinAnswer),
    "trace": (TraceRequest, TraceAnswer),
    "engagement": (EngagementRequest, EngagementAnswer),
    "ping": (Empty, Empty),
}
"""Each worker entry (worker/runner.py) with its request and its answer: the only names the controller calls."""


def teacher_request(tokens: Any, top_ids: Any) -> TeacherRequest:
    """The request that scores generated `tokens` ([batch, prompt + steps]) whose per-step top-k ids are `top_ids`
    ([batch, steps, k]): their rows as ids, the prompt as what the steps do not cover."""
    return {"ids": tokens.astype("int64").tolist(), "prompt": int(tokens.shape[1] - top_ids.shape[1])}


def tampered_reason(names: list[str], when: str) -> str:
    """The refusal's reason for a worker's `tampered` names: what changed, and when it was seen (e.g. "when its
    overrides module was imported")."""
    return (f"the candidate replaced what the worker's timing path calls, seen {when}: {', '.join(names[:6])}"
            + (f" and {len(names) - 6} more" if len(names) > 6 else ""))
