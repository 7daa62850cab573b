"""The tools Hyperloom offers, described once for every front end (MCP server, CLI, Python API).

Importing this module imports no tool: an entry names its request model, result model and function as
'module:attribute' strings, imported the first time they are read, so a CLI command pays only for the
tool it runs. An entry may also give the objects themselves. Its `cli` says which `hyperloom` command offers
it and how that command prints the result; the CLI's command tree is generated from these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hyperloom.core.tooldef import CliDef, Family, Hints, ToolDef, Trailing, resolve  # noqa: F401 - the front ends import them from here

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hyperloom.core.progress import ProgressFn
    from hyperloom.core.workspace import Workspace


def _freeze(request: Any, workspace: Workspace, progress: ProgressFn | None) -> BaseModel:
    from hyperloom.tools.gate.freeze import freeze

    del progress  # freezing copies and hashes a few files; nothing to report along the way
    return freeze(request, workspace)


CATALOG: tuple[ToolDef, ...] = (
    ToolDef(
        name="detect",
        title="Detect the GPU stack",
        description='Check the GPU stack bottom-up (silicon, driver, runtime, compiler) and name the layer a fault lives in, with '
                    'sources and fixes.',
        request="hyperloom.tools.detect.models:DetectRequest",
        result="hyperloom.tools.detect.models:DetectResult",
        run="hyperloom.tools.detect.api:run_detect",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("detect",), render="hyperloom.cli.render.detect:detect_report", aliases=("doctor",)),
    ),
    ToolDef(
        name="correctness_gate",
        title="Correctness gate",
        description=(
            "Judge candidate outputs against references under a tolerance declared in advance: |c - r| <= atol + rtol*|r| "
            "(or max_ulp), NaN per nan_policy. Cases are .npy paths, inline lists or a frozen reference_set."
        ),
        request="hyperloom.tools.gate.models:GateRequest",
        result="hyperloom.tools.gate.models:GateResult",
        run="hyperloom.tools.gate.api:run_gate",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(
            ("gate", "check"), render="hyperloom.cli.render.gate:gate_report", verdict=("passed",),
            group_help="Correctness gate: compare outputs with references under a declared tolerance",
        ),
    ),
    ToolDef(
        name="gate_freeze",
        title="Freeze a reference set",
        description='Freeze reference .npy outputs and their tolerance, before any trial, into a hashed folder correctness_gate takes as '
                    'reference_set.',
        request="hyperloom.tools.gate.models:FreezeRequest",
        result="hyperloom.tools.gate.models:FreezeResult",
        run=_freeze,
        hints=Hints(read_only=False, destructive=True, idempotent=False),
        cli=CliDef(("gate", "freeze"), render="hyperloom.cli.render.gate:freeze_report"),
    ),
    ToolDef(
        name="isa_census",
        title="ISA census of a target",
        description=(
            "The instruction set of an AMDGPU target (gfx1201, gfx942, ...) measured with LLVM: counts, capabilities "
            "present or absent with the instructions proving them. detail or match lists instructions (paged); compare_to"
            " diffs two targets."
        ),
        request="hyperloom.tools.isa.models:CensusRequest",
        result="hyperloom.tools.isa.models:CensusResult",
        run="hyperloom.tools.isa.api:run_census",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("census",), options="hyperloom.cli.commands.census:options", handler="hyperloom.cli.commands.census:run"),
    ),
    ToolDef(
        name="isa_probe",
        title="Assemble instructions",
        description=(
            "Assemble instruction lines (e.g. 'v_dot8_i32_iu4 v1, v2, v3, v4') for an AMDGPU target with llvm-mc: each "
            "accepted with its encoding, or rejected with a reason (unknown_mnemonic, not_supported_on_this_gpu, ...)."
        ),
        request="hyperloom.tools.isa.models:ProbeRequest",
        result="hyperloom.tools.isa.models:ProbeResult",
        run="hyperloom.tools.isa.api:run_probe",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("census",), via="--probe"),
    ),
    ToolDef(
        name="isa_audit",
        title="Unused ISA capabilities",
        description=(
            "List the capabilities of a target (from isa_census) that the kernels in given code objects never use, with "
            "the instructions that would provide each."
        ),
        request="hyperloom.tools.isa.models:AuditRequest",
        result="hyperloom.tools.isa.models:AuditResult",
        run="hyperloom.tools.isa.api:run_audit",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("census",), via="--audit"),
    ),
)


CATALOG += (
    ToolDef(
        name="compile_kernel",
        title="Compile a kernel",
        description=(
            "Compile a kernel offline for gfx targets (HIP, assembly), sm_XX (nvcc), host (C/C++) or Triton: code objects "
            "(cached), diagnostics, and per kernel registers, spills, LDS, occupancy. Next: disasm_verify."
        ),
        request="hyperloom.tools.compile.models:CompileRequest",
        result="hyperloom.tools.compile.models:CompileResult",
        run="hyperloom.tools.compile.api:compile_kernel",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("compile",), render="hyperloom.cli.render.compile:compile_report", verdict=("ok",)),
    ),
    ToolDef(
        name="allreduce_int6",
        title="INT6 compressed all-reduce",
        description=(
            "All-reduce N ranks' tensors with a 6-bit payload (a float32 scale per block, exact integer ring sums), "
            "simulated or a process per rank (gloo, nccl): error against the float64 sum and its bound, drift, wire bytes."
        ),
        request="hyperloom.tools.allreduce.models:AllreduceRequest",
        result="hyperloom.tools.allreduce.models:AllreduceResult",
        run="hyperloom.tools.allreduce.api:run_allreduce",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(
            ("allreduce", "run"), render="hyperloom.cli.render.allreduce:allreduce_report",
            verdict=("within_bound", "bit_identical_across_ranks", "matches_reference"),
            group_help="INT6 compressed all-reduce: run it, or time it against native bf16",
        ),
    ),
    ToolDef(
        name="disasm_verify",
        title="Verify a kernel's instructions",
        description=(
            "Prove from a code object's disassembly which instructions each kernel uses: expect rules must match "
            "(optionally >=N), forbid rules must not (a name, a glob like v_wmma_*, or a @set). Spills fail too."
        ),
        request="hyperloom.tools.verify.models:VerifyRequest",
        result="hyperloom.tools.verify.models:VerifyResult",
        run="hyperloom.tools.verify.api:verify",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("verify",), render="hyperloom.cli.render.verify:verify_report", verdict=("passed",), aliases=("disasm-verify",)),
    ),
)


CATALOG += (
    ToolDef(
        name="spec_init",
        title="Draft a kernel spec from a source",
        description=(
            "Draft kernel.yaml and a reference.py stub from a kernel source (.cu, .hip, .c) and the kernel's name, "
            "leaving what the source cannot say (sizes, launch, shapes, tolerance, the math) as TODOs, which it returns. "
            "Next: fill them, spec_check."
        ),
        request="hyperloom.tools.spec.models:SpecInitRequest",
        result="hyperloom.tools.spec.models:SpecInitResult",
        run="hyperloom.tools.spec.init:run_spec_init",
        hints=Hints(read_only=False, destructive=True, idempotent=False),
        cli=CliDef(
            ("spec", "init"), render="hyperloom.cli.render.spec:spec_init_report",
            group_help="Bring a kernel into the loop: draft a kernel.yaml from a source, check one, copy an example",
        ),
    ),
    ToolDef(
        name="spec_check",
        title="Check a kernel spec without a GPU",
        description=(
            "Validate a kernel.yaml without a GPU, every problem with its field, cause and next step: schema, TODOs, "
            "paths, expressions at every shape, tolerance, a reference run, compiles for targets. ok=true means bench and"
            " tune can take it."
        ),
        request="hyperloom.tools.spec.models:SpecCheckRequest",
        result="hyperloom.tools.spec.models:SpecCheckResult",
        run="hyperloom.tools.spec.check:run_spec_check",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("spec", "check"), render="hyperloom.cli.render.spec:spec_check_report", verdict=("ok",)),
    ),
    ToolDef(
        name="spec_example",
        title="Shipped example specs",
        description=(
            "List the shipped example specs, print one's kernel.yaml, or copy one (spec, source, reference) into a "
            "workspace folder (out)."
        ),
        request="hyperloom.tools.spec.models:SpecExampleRequest",
        result="hyperloom.tools.spec.models:SpecExampleResult",
        run="hyperloom.tools.spec.examples:run_spec_example",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("spec", "example"), render="hyperloom.cli.render.spec:spec_example_report"),
    ),
)


CATALOG += (
    ToolDef(
        name="bench",
        title="Benchmark a kernel",
        description=(
            "Time a kernel from its kernel.yaml on a GPU or the host: compiled, gated on every input set, then timed (cache"
            " flushed, device events, until the median's CI is tight). Returns timings, GB/s, TFLOP/s; a hang is TIMEOUT, a"
            " crash CRASH."
        ),
        request="hyperloom.tools.bench.models:BenchRequest",
        result="hyperloom.tools.bench.models:BenchResult",
        run="hyperloom.tools.bench.api:run_bench",
        hints=Hints(read_only=False, destructive=False, idempotent=False),
        cli=CliDef(("bench",), render="hyperloom.cli.render.bench:bench_report", verdict=("ok",)),
    ),
    ToolDef(
        name="bench_command",
        title="Time a program's own samples",
        description="Time any program whose last stdout line is JSON with samples_s, with bench's statistics. Runs with your rights, "
                    "ungated: prefer bench.",
        request="hyperloom.tools.bench.models:BenchCommandRequest",
        result="hyperloom.tools.bench.models:BenchResult",
        run="hyperloom.tools.bench.api:run_bench_command",
        hints=Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
        cli=CliDef(("bench-command",), render="hyperloom.cli.render.bench:bench_report", verdict=("ok",)),
    ),
)


CATALOG += (
    ToolDef(
        name="roofline",
        title="Measure the roofline",
        description=(
            "Measure this device's ceilings (DRAM bandwidth, FP32 FMA, NVIDIA FP16 tensor cores) with gated microbenchmarks"
            " beside datasheet peaks (ASSUMED), and place bench results on the roof. Run it before tuning."
        ),
        request="hyperloom.tools.roofline.models:RooflineRequest",
        result="hyperloom.tools.roofline.models:RooflineResult",
        run="hyperloom.tools.roofline.api:run_roofline",
        hints=Hints(read_only=False, destructive=False, idempotent=False),
        cli=CliDef(("roofline",), render="hyperloom.cli.render.roofline:roofline_report"),
    ),
)


CATALOG += (
    ToolDef(
        name="tune_start",
        title="Start or resume a tuning session",
        description=(
            "Search a kernel.yaml's tuning space for the fastest candidate that passes the gate; every candidate is "
            "built, rule-checked and gated before it is timed, failures recorded with their reason. Proposers: grid, "
            "random, tpe, cmaes, external (proposals only). Stops on a count, budget, patience, deadline or % of roof, "
            "then re-times the winner. Returns a session id at once."
        ),
        request="hyperloom.tools.tune.models:TuneRequest",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_start",
        hints=Hints(read_only=False, destructive=False, idempotent=False),
        cli=CliDef(
            ("tune", "start"), handler="hyperloom.cli.commands.tune:start", default=True,
            group_help="Tuning sessions: start or resume one in the foreground (`tune --spec S` is `tune start`), watch, "
                       "steer, stop, report",
        ),
    ),
    ToolDef(
        name="tune_status",
        title="Tuning session status",
        description=(
            "Progress of a tuning session: candidates recorded, passed and rejected, the best so far, budget spent and "
            "left, why it stopped."
        ),
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_status",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("tune", "status"), render="hyperloom.cli.render.tune:status_report"),
    ),
    ToolDef(
        name="tune_propose",
        title="Propose a tuning candidate",
        description=(
            "Queue a candidate (defines over the variant's) in a tuning session, run before the proposer's own; one "
            "already recorded is refused with its verdict."
        ),
        request="hyperloom.tools.tune.models:ProposeRequest",
        result="hyperloom.tools.tune.models:ProposeResult",
        run="hyperloom.tools.tune.api:tune_propose",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("tune", "propose"), render="hyperloom.cli.render.tune:propose_report", verdict=("accepted",)),
    ),
    ToolDef(
        name="tune_stop",
        title="Stop a tuning session",
        description=(
            "Stop a tuning session: nothing new starts, candidates in flight are recorded, the report is written."
        ),
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneStatus",
        run="hyperloom.tools.tune.api:tune_stop",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("tune", "stop"), render="hyperloom.cli.render.tune:status_report"),
    ),
    ToolDef(
        name="tune_report",
        title="Tuning session report",
        description=(
            "A tuning session's leaderboard, rejected candidates with reasons, the winner's re-validation and shape "
            "sweep; once stopped, also writes report.md and breakdown.json."
        ),
        request="hyperloom.tools.tune.models:SessionRef",
        result="hyperloom.tools.tune.models:TuneReport",
        run="hyperloom.tools.tune.api:tune_report",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("tune", "report"), render="hyperloom.cli.render.tune:tune_report"),
    ),
)


CATALOG += (
    ToolDef(
        name="serve_sweep",
        title="Sweep a model server",
        description=(
            "Measure an OpenAI-compatible server (llama.cpp, vLLM, SGLang, Lemonade) at 1, 2, 4, ... concurrent streams: "
            "tokens/s, TTFT, inter-token and end-to-end latency, and the knee concurrency."
        ),
        request="hyperloom.tools.serve.models:ServeSweepRequest",
        result="hyperloom.tools.serve.models:ServeSweepResult",
        run="hyperloom.tools.serve.api:run_serve_sweep",
        hints=Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
        cli=CliDef(
            ("serve", "sweep"), render="hyperloom.cli.render.serve:sweep_report",
            group_help="Sweep a model server's concurrency: throughput knee, latency, saturation, cached per model",
            trailing=Trailing(
                ("server_command",), "-- SERVER COMMAND",
                "a server to start for the sweep and stop afterwards, after --, e.g. -- llama-server -m model.gguf --port 8080 -np 8",
            ),
        ),
    ),
)


CATALOG += (
    ToolDef(
        name="profile",
        title="Profile a workload",
        description=(
            "Where a workload's GPU time goes: run a script or module:function under torch.profiler, or read a "
            "torch.profiler or rocprofv3 trace. Returns kernels by time, idle time, hotspots by headroom under the roof, "
            "fusion candidates, spec starters."
        ),
        request="hyperloom.tools.profile.models:ProfileRequest",
        result="hyperloom.tools.profile.models:ProfileResult",
        run="hyperloom.tools.profile.api:run_profile",
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        cli=CliDef(
            ("profile",), render="hyperloom.cli.render.profile:profile_report",
            trailing=Trailing(
                ("workload", "args"), "WORKLOAD [ARG ...]",
                "script.py or module:function to run under the profiler, then its arguments (or give --trace)",
            ),
        ),
    ),
)


CATALOG += (
    ToolDef(
        name="workload_freeze",
        title="Freeze a workload's outputs",
        description="Run a workload's baseline twice in workers and freeze its outputs under the tolerance declared now.",
        request="hyperloom.tools.workload.models:WorkloadFreezeRequest",
        result="hyperloom.tools.workload.models:WorkloadFreezeResult",
        run="hyperloom.tools.workload.api:workload_freeze",
        hints=Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
        cli=CliDef(("workload", "freeze"), render="hyperloom.cli.render.workload:freeze_report", verdict=("ok",),
                   group_help="A workload as the unit: freeze its outputs, then time it end to end beside levers (gated A/B)"),
    ),
    ToolDef(
        name="workload_bench",
        title="Time a workload A/B",
        description="Time a frozen workload end to end beside candidates (levers, combinations), each gated first, A/B interleaved.",
        request="hyperloom.tools.workload.models:WorkloadBenchRequest",
        result="hyperloom.tools.workload.models:WorkloadBenchResult",
        run="hyperloom.tools.workload.api:workload_bench",
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        cli=CliDef(("workload", "bench"), render="hyperloom.cli.render.workload:bench_report", verdict=("ok",),
                   handler="hyperloom.cli.commands.workload:bench"),
    ),
    ToolDef(
        name="workload_integrate",
        title="Put a kernel into a workload",
        description="Put a kernel in place of a model's method inside its worker; gated, engagement counted, A/B: KEEP or REVERT.",
        request="hyperloom.tools.workload.models:IntegrateRequest",
        result="hyperloom.tools.workload.models:IntegrateResult",
        run="hyperloom.tools.workload.api:workload_integrate",
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        cli=CliDef(("workload", "integrate"), render="hyperloom.cli.render.workload:integrate_report", verdict=("ok",)),
    ),
)


CATALOG += (
    ToolDef(
        name="optimize_start",
        title="Start an optimize campaign",
        description="Start or resume a campaign over a workload: freeze, baseline, levers alone then stacked, proposals, revalidation, "
                    "sweep, report.",
        request="hyperloom.tools.optimize.models:OptimizeRequest",
        result="hyperloom.tools.optimize.models:OptimizeStatus",
        run="hyperloom.tools.optimize.api:optimize_start",
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        cli=CliDef(("optimize", "start"), handler="hyperloom.cli.commands.optimize:start",
                   group_help="Optimize campaigns over a workload: start or resume one in the foreground, watch, propose levers, "
                              "stop, report"),
    ),
    ToolDef(
        name="optimize_status",
        title="Optimize campaign status",
        description="A campaign's phase, candidates, kept stack and its measured gain, budget spent, why it stopped.",
        request="hyperloom.tools.optimize.models:OptimizeRef",
        result="hyperloom.tools.optimize.models:OptimizeStatus",
        run="hyperloom.tools.optimize.api:optimize_status",
        hints=Hints(read_only=True, destructive=False, idempotent=True),
        cli=CliDef(("optimize", "status"), render="hyperloom.cli.render.optimize:status_report"),
    ),
    ToolDef(
        name="optimize_propose",
        title="Propose levers to a campaign",
        description="Queue levers (kernel overrides included) to try on top of the campaign's kept stack.",
        request="hyperloom.tools.optimize.models:OptimizeProposeRequest",
        result="hyperloom.tools.optimize.models:ProposeResult",
        run="hyperloom.tools.optimize.api:optimize_propose",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("optimize", "propose"), render="hyperloom.cli.render.optimize:propose_report", verdict=("accepted",)),
    ),
    ToolDef(
        name="optimize_stop",
        title="Stop an optimize campaign",
        description="Stop a campaign: nothing new starts, the measurement in flight is recorded, the report is written.",
        request="hyperloom.tools.optimize.models:OptimizeRef",
        result="hyperloom.tools.optimize.models:OptimizeStatus",
        run="hyperloom.tools.optimize.api:optimize_stop",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("optimize", "stop"), render="hyperloom.cli.render.optimize:status_report"),
    ),
    ToolDef(
        name="optimize_report",
        title="Optimize campaign report",
        description="Every measurement with its verdict and reason, the stack, revalidations, sweep; writes report.md and breakdown.json "
                    "once stopped.",
        request="hyperloom.tools.optimize.models:OptimizeRef",
        result="hyperloom.tools.optimize.models:OptimizeReport",
        run="hyperloom.tools.optimize.api:optimize_report",
        hints=Hints(read_only=False, destructive=False, idempotent=True),
        cli=CliDef(("optimize", "report"), render="hyperloom.cli.render.optimize:report_text"),
    ),
)


FAMILIES: tuple[Family, ...] = (
    Family(
        name="tune",
        title="Tuning sessions",
        description=(
            "Search a kernel.yaml's tuning space; each candidate built, rule-checked and gated before timing, failures "
            "recorded with a reason. action: start (or resume; proposers grid, random, tpe, cmaes, external; stops on "
            "count, budget, patience, deadline, % of roof; re-times the winner), status, propose (defines, a source or a "
            "diff), stop, report."
        ),
        actions=(("start", "tune_start"), ("status", "tune_status"), ("propose", "tune_propose"), ("stop", "tune_stop"),
                 ("report", "tune_report")),
    ),
    Family(
        name="workload",
        title="Workloads end to end",
        description=(
            "A model's workload (a factory returning step() and outputs()). action: freeze (baseline run twice, outputs "
            "frozen under the tolerance declared now), bench (end to end beside lists of levers, e.g. compile, graph, "
            "knob:NAME=VALUE, overrides:FILE; each gated, checked for engagement, A/B interleaved), integrate "
            "(a kernel in place of a method: KEEP or REVERT)."
        ),
        actions=(("freeze", "workload_freeze"), ("bench", "workload_bench"), ("integrate", "workload_integrate")),
    ),
    Family(
        name="optimize",
        title="Optimize a workload",
        description=(
            "A campaign over a workload: frozen, baseline timed, each lever alone, winners and "
            "proposals stacked (each gated, A/B-timed on it), the stack re-timed at each keep, a sweep. action: "
            "start (or resume), status, propose (levers, e.g. overrides:F.py), stop, report."
        ),
        actions=(("start", "optimize_start"), ("status", "optimize_status"), ("propose", "optimize_propose"), ("stop", "optimize_stop"),
                 ("report", "optimize_report")),
    ),
    Family(
        name="spec",
        title="Kernel specs (kernel.yaml)",
        description=(
            "A kernel.yaml: what a kernel computes and how to judge it. action: init (draft one from a .cu/.hip/.c source, "
            "TODOs returned), check (validate without a GPU; ok=true means bench and tune run it), example (list, show or "
            "copy a shipped spec)."
        ),
        actions=(("init", "spec_init"), ("check", "spec_check"), ("example", "spec_example")),
    ),
    Family(
        name="isa",
        title="AMDGPU instruction set truth",
        description=(
            "An AMDGPU target's instruction set, measured offline with LLVM. action: census (capabilities with proving "
            "instructions; detail or match lists them, compare_to diffs), probe (assemble lines with llvm-mc), audit "
            "(capabilities code objects never use)."
        ),
        actions=(("census", "isa_census"), ("probe", "isa_probe"), ("audit", "isa_audit")),
    ),
)


def family_of(name: str) -> Family | None:
    """The family whose actions include the catalog entry `name`, if any."""
    return next((family for family in FAMILIES if any(entry == name for _, entry in family.actions)), None)


def mcp_tools() -> list[ToolDef | Family]:
    """What the MCP server lists, in catalog order: each entry on its own, or its family where the first of its
    actions stood."""
    listed: list[ToolDef | Family] = []
    for entry in CATALOG:
        family = family_of(entry.name)
        if family is None:
            listed.append(entry)
        elif family not in listed:
            listed.append(family)
    return listed


def tool(name: str) -> ToolDef:
    """The catalog entry called `name`."""
    for entry in CATALOG:
        if entry.name == name:
            return entry
    raise KeyError(name)
