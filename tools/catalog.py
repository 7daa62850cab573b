"""The tools Hyperloom offers, described once for every front end (MCP server, CLI, Python API).

Importing this module imports no tool: an entry names its request model, result model and function as
'module:attribute' strings, imported the first time they are read, so a CLI command pays only for the
tool it runs. An entry may also give the objects themselves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import BaseModel

    from hyperloom.core.progress import ProgressFn
    from hyperloom.core.workspace import Workspace


def resolve(ref: Any) -> Any:
    """The object a 'package.module:attribute' string names, imported now; anything else as it is."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


class ToolDef:
    """One tool: its models, its function, and truthful behaviour hints.

    `request`, `result` and `run` are each the object or its 'module:attribute' name; reading the
    attribute imports a name once and returns the object.
    """

    def __init__(
        self,
        *,
        name: str,
        title: str,
        description: str,
        request: type[BaseModel] | str,
        result: type[BaseModel] | str,
        run: Callable[[Any, Workspace, ProgressFn | None], BaseModel] | str,
        read_only: bool,
        destructive: bool,
        idempotent: bool,
        open_world: bool = False,
    ) -> None:
        self.name, self.title, self.description = name, title, description
        self.read_only, self.destructive, self.idempotent, self.open_world = read_only, destructive, idempotent, open_world
        self._refs: dict[str, Any] = {"request": request, "result": result, "run": run}

    def _get(self, field: str) -> Any:
        value = self._refs[field] = resolve(self._refs[field])
        return value

    @property
    def request(self) -> type[BaseModel]:
        return self._get("request")

    @property
    def result(self) -> type[BaseModel]:
        return self._get("result")

    @property
    def run(self) -> Callable[[Any, Workspace, ProgressFn | None], BaseModel]:
        return self._get("run")

    def __repr__(self) -> str:
        return f"ToolDef(name={self.name!r})"


def _freeze(request: Any, workspace: Workspace, progress: ProgressFn | None) -> BaseModel:
    from hyperloom.tools.gate.freeze import freeze

    del progress  # freezing copies and hashes a few files; nothing to report along the way
    return freeze(request, workspace)


CATALOG: tuple[ToolDef, ...] = (
    ToolDef(
        name="detect",
        title="Detect the GPU stack",
        description=(
            "Check the GPU stack bottom-up and name the layer a fault lives in: silicon (KFD topology, PCI IDs, "
            "datasheet peaks tagged ASSUMED), driver (amdgpu, /dev/kfd and render-node permissions, the user's groups), "
            "runtime (rocminfo, HIP version, amd-smi/rocm-smi clocks, performance level, power cap, processes), compiler "
            "(hipcc, clang, llvm-mc with amdgcn and whether it knows the detected gfx target) and NVIDIA (nvidia-smi "
            "driver and CUDA versions, compute capability, clocks). Each finding has a status (ok/warn/fail/unknown), the "
            "command that produced it, the layer's ground-truth tool, a fix and evidence. Known traps are named findings "
            "(trap.*): ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES on a display GPU, HSA_OVERRIDE_GFX_VERSION, a gating "
            "performance level, missing render/video groups, a compiler too old for the target, other processes holding "
            "VRAM. A missing or hanging tool makes its layer unknown, with what to install. Run it first on a new machine."
        ),
        request="hyperloom.tools.detect.models:DetectRequest",
        result="hyperloom.tools.detect.models:DetectResult",
        run="hyperloom.tools.detect.detect:run_detect",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="correctness_gate",
        title="Correctness gate",
        description=(
            "Decide whether candidate kernel outputs match their references under a tolerance declared in advance. "
            "An element matches when |c - r| <= atol + rtol*|r| (or within max_ulp ULPs, when set); NaN follows "
            "nan_policy; +/-Inf must match in sign and position. Give candidates and references as .npy paths inside "
            "the workspace or small inline lists, one per case, or give a frozen reference_set (its tolerance is used). "
            "Returns a verdict per case and overall, error statistics, the first mismatches, sha256 of both sides and "
            "MEASURED evidence. A candidate that fails has no speed worth measuring: fix it before benchmarking."
        ),
        request="hyperloom.tools.gate.models:GateRequest",
        result="hyperloom.tools.gate.models:GateResult",
        run="hyperloom.tools.gate.check:run_gate",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="gate_freeze",
        title="Freeze a reference set",
        description=(
            "Freeze reference outputs with the tolerance declared for them, before any candidate is tried: copies "
            "each reference .npy into a new folder and writes manifest.json with the tolerance and the sha256 of "
            "every input and output. correctness_gate then takes reference_set=<folder> and refuses it if anything "
            "changed. Refuses to replace an existing folder unless overwrite is true."
        ),
        request="hyperloom.tools.gate.models:FreezeRequest",
        result="hyperloom.tools.gate.models:FreezeResult",
        run=_freeze,
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    ToolDef(
        name="isa_census",
        title="ISA census of an AMD GPU target",
        description=(
            "The real instruction set of an AMDGPU target (e.g. gfx1201, gfx1100, gfx942), measured with LLVM's "
            "disassembler (every opcode of every encoding family) and assembler (aliases). Returns a summary: counts, "
            "the capabilities present with the instructions that prove them (int dot2/dot4/dot8 signed/unsigned/mixed, "
            "fp8 dots and conversions, WMMA, SWMMAC, MFMA, packed FP32, VOPD, transpose and LDS loads, float atomics, ...), "
            "those absent, and self-checks. detail=true or match='wmma' lists instructions with an example encoding, "
            "paged by offset/limit; compare_to=<target> lists what each target has that the other lacks. MEASURED "
            "with a named llvm-mc version; the census depends on that version. Cached per llvm-mc binary and target."
        ),
        request="hyperloom.tools.isa.models:CensusRequest",
        result="hyperloom.tools.isa.models:CensusResult",
        run="hyperloom.tools.isa.report:run_census",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="isa_probe",
        title="Assemble instructions for a target",
        description=(
            "Assemble instruction lines with operands (e.g. 'v_dot8_i32_iu4 v1, v2, v3, v4') for one AMDGPU target "
            "with llvm-mc. Each line is accepted, with its canonical spelling and encoding, or rejected with LLVM's "
            "error class: unknown_mnemonic (LLVM does not know it), not_supported_on_this_gpu, "
            "operands_not_valid_for_gpu_or_mode (e.g. wave32 vs wave64 register widths; try wave64=true), "
            "invalid_operand, too_few_operands, other. One instruction per line; directives are refused."
        ),
        request="hyperloom.tools.isa.models:ProbeRequest",
        result="hyperloom.tools.isa.models:ProbeResult",
        run="hyperloom.tools.isa.probe:run_probe",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="isa_audit",
        title="Capabilities a set of kernels leaves unused",
        description=(
            "Disassemble code objects (.hsaco files, offload bundles, or folders of them, inside the workspace) built "
            "for a target and report which of the target's capabilities (from isa_census) their kernels never use, "
            "with the instructions that would provide each: what those kernels leave on the table. Code objects for "
            "other targets are skipped and listed."
        ),
        request="hyperloom.tools.isa.models:AuditRequest",
        result="hyperloom.tools.isa.models:AuditResult",
        run="hyperloom.tools.isa.audit:run_audit",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
)


CATALOG += (
    ToolDef(
        name="compile_kernel",
        title="Compile a kernel",
        description=(
            "Compile a kernel source for one or more targets, offline: HIP (.hip/.cpp) for gfx targets with clang "
            "(no ROCm needed; a shipped prelude stands in for <hip/hip_runtime.h>) or hipcc when ROCm is installed; "
            "AMDGPU assembly (.s) with llvm-mc and ld.lld; CUDA (.cu), or HIP through a compatibility header, for "
            "sm_XX with nvcc. Returns per target: the code object path in the workspace (content-addressed; an "
            "unchanged build is served from the cache), structured diagnostics (file, line, column), and per kernel "
            "VGPRs, SGPRs, AGPRs, spills, LDS and scratch bytes, wave size, max workgroup size and the compiler's "
            "occupancy. A failed build is a result with ok=false and its diagnostics; a builtin the target lacks is "
            "named as a missing feature. Next: disasm_verify on the code object."
        ),
        request="hyperloom.tools.compile.models:CompileRequest",
        result="hyperloom.tools.compile.models:CompileResult",
        run="hyperloom.tools.compile.build:compile_kernel",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="allreduce_int6",
        title="INT6 compressed all-reduce",
        description=(
            "All-reduce N ranks' tensors with a 6-bit payload: a max all-reduce agrees one float32 scale per block, each "
            "rank rounds to signed 6-bit codes (nearest, or seeded stochastic), 4 codes travel in 3 bytes through a ring "
            "reduce-scatter and all-gather whose integer sums are exact, and every rank dequantizes the same bits. Give "
            "one .npy per rank (float32, float16, or bfloat16 bits), or ranks + shape + seed + distribution to generate "
            "them. backend numpy simulates the ring in-process; gloo (CPU) and nccl (GPUs; RCCL on AMD) run one process "
            "per rank over torch.distributed and are checked bit-for-bit against numpy. Writes the result .npy and returns "
            "statistics only: max abs/rel error against the float64 sum, the analytic error bound and whether the error "
            "is within it, cross-rank drift (must be 0), compression against fp16/fp32 with scales counted, bytes on the "
            "wire per rank, and MEASURED evidence. NaN/Inf inputs, shape or dtype mismatches and sums that overflow the "
            "dtype are errors."
        ),
        request="hyperloom.tools.allreduce.models:AllreduceRequest",
        result="hyperloom.tools.allreduce.models:AllreduceResult",
        run="hyperloom.tools.allreduce.api:run_allreduce",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="disasm_verify",
        title="Verify a kernel's instructions",
        description=(
            "Prove from a code object's disassembly which instructions each kernel uses. Give expect rules (must "
            "appear, optionally with a bound like >=4) and forbid rules (must not appear): an instruction name "
            "(v_dot8_i32_iu4), a glob (v_wmma_*), or a generation-aware set such as @dot4_i8, which means "
            "v_dot4_i32_iu8 on gfx11/gfx12 and v_dot4_i32_i8 or v_dot4c_i32_i8 on gfx9. Spills are checked by "
            "default (spilled registers, or scratch traffic in a kernel that declares none). Returns a verdict per "
            "rule and kernel with the matching lines, and an instruction histogram per kernel. Reads AMD code "
            "objects (clang, hipcc, Triton, offload bundles) and NVIDIA cubins (through cuobjdump)."
        ),
        request="hyperloom.tools.verify.models:VerifyRequest",
        result="hyperloom.tools.verify.models:VerifyResult",
        run="hyperloom.tools.verify.verify:verify",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
)


CATALOG += (
    ToolDef(
        name="spec_init",
        title="Draft a kernel spec from a source",
        description=(
            "Bring a user's kernel into the loop: from a source (.cu, .hip, .c) and the kernel's name, read its parameters "
            "with clang's AST and write a draft kernel.yaml and reference.py stub: pointers become buffers (const: input, "
            "else output) with their dtypes, values become scalars, template parameters become defines. What the source "
            "cannot say (dimensions, launch, shapes, tolerance, the reference's math) is a TODO; returns spec_check's list of "
            "them. Never replaces files unless overwrite=true. Next: fill the TODOs, spec_check, bench."
        ),
        request="hyperloom.tools.spec.api:SpecInitRequest",
        result="hyperloom.tools.spec.api:SpecInitResult",
        run="hyperloom.tools.spec.init:run_spec_init",
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    ToolDef(
        name="spec_check",
        title="Check a kernel spec without a GPU",
        description=(
            "Validate a kernel.yaml and report every problem at once, each with its field path, cause and next step: "
            "schema, TODO placeholders, files inside the workspace, every expression at every shape (buffer sizes, scalars, "
            "grid, block, metric), tuning values, the tolerance's consistency; the reference run at the smallest shape in a "
            "worker (outputs, dtypes, NaN); each variant compiled for `targets` with resource usage; and whether this machine "
            "can run each target. ok=true means bench and tune can take it."
        ),
        request="hyperloom.tools.spec.api:SpecCheckRequest",
        result="hyperloom.tools.spec.api:SpecCheckResult",
        run="hyperloom.tools.spec.check:run_spec_check",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="spec_example",
        title="Shipped example specs",
        description=(
            "List the shipped example kernel specs, print one (its kernel.yaml with comments), or copy one with its "
            "source and reference into a new workspace folder (out) to start from."
        ),
        request="hyperloom.tools.spec.api:SpecExampleRequest",
        result="hyperloom.tools.spec.api:SpecExampleResult",
        run="hyperloom.tools.spec.examples:run_spec_example",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
)


CATALOG += (
    ToolDef(
        name="bench",
        title="Benchmark a kernel",
        description=(
            "Time a kernel from its kernel.yaml (variant, shape index, target) on the GPU or host CPU: it is compiled, "
            "run once per input set (seeded, plus the spec's adversarial sets) on poisoned outputs and gated against "
            "the spec's reference and tolerance; only if every set passes is it timed. Timing: warm-up by time, "
            "repetitions until the median's 95 % CI is within target_ci, last-level cache flushed before each, "
            "device events enqueued behind the flush and a short spin for kernel-only time (the host's launch latency stays "
            "outside them) and the host clock for wall time. Returns median/min/p10/p90/mean/"
            "std/CV/outliers, achieved GB/s and TFLOP/s from the spec's metric, clocks and temperature before and "
            "after (nvidia-smi), and the artifacts folder with raw samples. The kernel and the spec's reference run in "
            "worker processes with a timeout: a hang is TIMEOUT, a crash CRASH. Writes only under .hyperloom/ in the workspace."
        ),
        request="hyperloom.tools.bench.models:BenchRequest",
        result="hyperloom.tools.bench.models:BenchResult",
        run="hyperloom.tools.bench.run:run_bench",
        read_only=False,
        destructive=False,
        idempotent=False,
    ),
    ToolDef(
        name="bench_command",
        title="Time a program's own samples",
        description=(
            "Run any program (an argument list, no shell, in the workspace root, killed at timeout_s) whose last stdout "
            "line is JSON with samples_s (seconds per repetition) and optionally bytes, flops and device; returns the same "
            "statistics as bench. The program runs with your rights and may do anything: nothing is gated, so its speed "
            "says nothing about correctness. Prefer bench with a kernel.yaml."
        ),
        request="hyperloom.tools.bench.models:BenchCommandRequest",
        result="hyperloom.tools.bench.models:BenchResult",
        run="hyperloom.tools.bench.command:run_bench_command",
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=True,
    ),
)


CATALOG += (
    ToolDef(
        name="roofline",
        title="Measure the roofline",
        description=(
            "Measure this device's ceilings with shipped microbenchmarks, each gated and timed through bench: DRAM "
            "copy, read and write bandwidth, peak FP32 FMA and (NVIDIA) FP16 tensor-core rate. Adds the part's "
            "datasheet peaks tagged ASSUMED, places kernels from bench result files (arithmetic intensity, "
            "attainable performance, percent of roof, memory- or compute-bound), and writes roofline.json plus a PNG "
            "and SVG plot. Use it before tuning to know the target number, and after to say how far from it a kernel is."
        ),
        request="hyperloom.tools.roofline.models:RooflineRequest",
        result="hyperloom.tools.roofline.models:RooflineResult",
        run="hyperloom.tools.roofline.run:run_roofline",
        read_only=False,
        destructive=False,
        idempotent=False,
    ),
)


CATALOG += (
    ToolDef(
        name="tune_start",
        title="Start or resume a tuning session",
        description=(
            "Search a kernel.yaml's tuning space (its `tuning` defines) for the fastest candidate that passes the gate. "
            "The variant's own defines are the baseline, run first. Each candidate gets a content hash (never run twice), "
            "is compiled (cached), checked against optional disasm expect/forbid rules, run on every input set (seeded and "
            "adversarial, references frozen in the session) and gated; only a passing one is timed. Failures are recorded "
            "with their reason (COMPILE_ERROR, RULE_FAILED, TIMEOUT, CRASH, NAN, WRONG with the input set) and the loop goes "
            "on. Proposers: grid, random, tpe (Optuna TPE), cmaes (Optuna CMA-ES), external (tune_propose). Stops on max_candidates, device-second "
            "budget, patience, deadline or % of roofline. Runs one candidate per GPU at once (devices, or the idle ones) in warm "
            "worker processes while the next candidates compile (worker_mode fresh: a process per launch). Then re-times winner "
            "and baseline interleaved on every device used and sweeps every shape, a regression flagged only beyond noise. "
            "Returns a session id at once (background=true); follow with tune_status, steer with tune_propose and tune_stop, read tune_report. Naming an existing session resumes it without repeating a finished trial."
        ),
        request="hyperloom.tools.tune.models:TuneRequest",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_start",
        read_only=False,
        destructive=False,
        idempotent=False,
    ),
    ToolDef(
        name="tune_status",
        title="Tuning session status",
        description="Progress of a tuning session: candidates recorded, passed and rejected, the best so far with its speedup, budget spent and left, queued proposals, why it stopped.",
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_status",
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="tune_propose",
        title="Propose a tuning candidate",
        description=(
            "Queue a candidate (defines merged over the variant's) for a tuning session; the loop runs queued candidates "
            "before its own proposer's. A candidate already recorded is refused with its earlier verdict. Read tune_report "
            "to decide the next proposal."
        ),
        request="hyperloom.tools.tune.models:ProposeRequest",
        result="hyperloom.tools.tune.models:ProposeResult",
        run="hyperloom.tools.tune.api:tune_propose",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="tune_stop",
        title="Stop a tuning session",
        description="Stop a tuning session: nothing new starts, candidates in flight finish and are recorded, and the report is written. Stopping twice is harmless.",
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_stop",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="tune_report",
        title="Tuning session report",
        description=(
            "The session's leaderboard (median, speedup against the baseline, GB/s, TFLOP/s, % of roof), rejected candidates "
            "with their reasons, the winner's interleaved re-validation and shape sweep, and the budget spent. Once the session "
            "is not running, also writes report.md and breakdown.json in its folder (the same files each time)."
        ),
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneReport",
        run="hyperloom.tools.tune.api:tune_report",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
)


CATALOG += (
    ToolDef(
        name="serve_sweep",
        title="Sweep a model server's concurrency",
        description=(
            "Measure a model served with continuous batching through its OpenAI-compatible API (llama.cpp's llama-server, "
            "vLLM, SGLang, Lemonade): streamed requests at 1, 2, 4, ... concurrent streams up to max_concurrency, each level "
            "warmed up, then measured: aggregate and per-stream output tokens/s, p50/p90/p99 of time to first token, "
            "inter-token latency and end-to-end latency, failures. Synthetic prompts of input_tokens (calibrated against "
            "the server's own token counts) with output_tokens forced (ignore_eos), or a JSONL prompts file. Stops early on "
            "failures, a latency limit (max_ttft_s, max_itl_s, max_e2e_s), the server's queue filling, or its capacity where "
            "it says it (llama.cpp slots from /props, vLLM KV-cache blocks from /metrics), and names the bound. Returns the "
            "knee (the lowest concurrency reaching knee_fraction of the best throughput), whether throughput was still "
            "rising when it stopped, a PNG/SVG plot and MEASURED evidence. Results are cached per model, server build, "
            "device, server arguments and lengths: a repeat call returns the cached sweep (cached=true) unless refresh. "
            "server_command starts the server (a program run with your rights) and always stops it. Contacts only base_url's "
            "server. Use it to pick a serving concurrency from a measurement; kernel work is for when one kernel is the bottleneck."
        ),
        request="hyperloom.tools.serve.models:ServeSweepRequest",
        result="hyperloom.tools.serve.models:ServeSweepResult",
        run="hyperloom.tools.serve.run:run_serve_sweep",
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=True,
    ),
)


CATALOG += (
    ToolDef(
        name="profile",
        title="Profile a workload: kernel and fusion hotspots",
        description=(
            "Find where a model's time goes on the GPU. Runs a workload (a script, or module:function called once per step) "
            "under torch.profiler in a worker process with a timeout (CUDA, ROCm or CPU torch; shapes recorded, warm-up steps "
            "skipped), or reads a trace someone has: a torch.profiler Chrome trace (.json/.json.gz) or rocprofv3's "
            "kernel_trace.csv. Returns kernels grouped by name (time, share, count, mean, launch shapes, the op that launched "
            "them), time by class (GEMM, attention, normalization, elementwise, reduction, communication, memory copy), GPU "
            "busy and idle time (a launch-bound run is named), hotspots: ops at their shapes with bytes and flops from shape "
            "models, achieved GB/s and TFLOP/s and percent of the roof (a roofline file from this device, one measured now, "
            "or the datasheet, ASSUMED), ranked by time x headroom; fusion candidates (chains of memory-bound ops over the "
            "same tensors, with the bytes a fusion saves); and for the top hotspots what a kernel spec needs plus a reference "
            "stub calling the torch op at the recorded shapes. Writes report.md, profile.json and plots under "
            ".hyperloom/profile/. The workload runs with your rights. Start FIND-GAPS here when the user has a workload."
        ),
        request="hyperloom.tools.profile.models:ProfileRequest",
        result="hyperloom.tools.profile.models:ProfileResult",
        run="hyperloom.tools.profile.run:run_profile",
        read_only=False,
        destructive=False,
        idempotent=False,
        open_world=True,
    ),
)


def tool(name: str) -> ToolDef:
    """The catalog entry called `name`."""
    for entry in CATALOG:
        if entry.name == name:
            return entry
    raise KeyError(name)
