"""bench: gate a kernel on every input set, then time it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.figures import significant
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shipped import stage_shipped_file
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.clocks import device_state
from hyperloom.tools.bench.models import BenchRequest, BenchResult, InputSetVerdict
from hyperloom.tools.bench.references import stage_references
from hyperloom.tools.bench.stats import summarize
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.drivers import HOST_TARGET, NVIDIA_TARGET
from hyperloom.tools.compile.models import CompileRequest, TargetBuild
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest
from hyperloom.tools.gate.outputs import output_gate
from hyperloom.tools.runtime.launcher import run_trial
from hyperloom.tools.runtime.probe import require_backend
from hyperloom.tools.runtime.models import HOST_BACKENDS, ArgSpec, Timing, TrialRequest, TrialResult
from hyperloom.tools.spec.entry import exported_functions, instance_source, is_template, resolve_symbol
from hyperloom.tools.spec.expr import evaluate_int
from hyperloom.tools.spec.load import LoadedSpec, argument_value, buffer_shape, draw_inputs, load_spec, output_buffers, resolved_defines, scalar_value
from hyperloom.tools.spec.reference import REFERENCE_TIMEOUT_S
from hyperloom.tools.spec.models import BufferArg, Variant
from hyperloom.tools.triton.launch import TritonLaunch, triton_build_with

TIMING_SOURCE = "timing.hip"
TrialRunner = Callable[..., TrialResult]
"""Runs a trial as launcher.run_trial(request, timeout_s=..., device=...) does."""


def backend_for(target: str, language: str | None = None) -> str:
    if target == HOST_TARGET:
        return "triton_interpreter" if language == "triton" else "c"  # Triton on the CPU: its interpreter, for the gate only
    return "cuda" if NVIDIA_TARGET.fullmatch(target) else "hip"


def run_bench(request: BenchRequest, workspace: Workspace, progress: ProgressFn | None = None) -> BenchResult:
    timing = Timing(
        warmup_s=request.warmup_s, min_reps=request.min_reps, max_reps=max(request.max_reps, request.min_reps),
        max_time_s=request.max_time_s, target_ci=request.target_ci, flush_cache=request.flush_cache, flush_mode=request.flush_mode,
    )
    return _bench_spec(request, workspace, timing, progress)


@dataclass(frozen=True)
class Launchable:
    """A spec's variant on one target and shape, with its launch geometry evaluated."""

    loaded: LoadedSpec
    variant_name: str
    variant: Variant
    target: str
    shape: dict[str, int]
    backend: str
    grid: list[int]
    block: list[int]
    shared_bytes: int
    symbol: str | None = None  # the entry's symbol in the built code object, once build_with has resolved it
    triton: TritonLaunch | None = None  # a Triton kernel's launch parameters (kept arguments, hidden scratch), once built

    @property
    def input_sets(self) -> list[str]:
        return ["seeded", *self.loaded.spec.adversarial]


def prepare(loaded: LoadedSpec, variant: str | None, target: str, shape_index: int) -> Launchable:
    """Check the variant builds for `target` and evaluate the launch geometry at the shape."""
    variant_name, chosen = loaded.variant(variant)
    if chosen.targets is not None and target not in chosen.targets:
        raise HyperloomError(f"variant {variant_name!r} does not build for {target}", f"use one of {chosen.targets}")
    return at_shape(loaded, variant_name, chosen, target, loaded.shape(shape_index))


def builds_for(loaded: LoadedSpec, variant: Variant, target: str) -> bool:
    """Whether `variant` is meant to build for `target`: its targets list, and its language's kind of target."""
    if variant.targets is not None and target not in variant.targets:
        return False
    _, language = loaded.source_of(variant)
    host = target == HOST_TARGET
    if language == "triton":
        return True  # gfx and sm_XX ahead of time, host through Triton's interpreter
    return host if language in ("c", "cpp") else not host and not (language == "cuda" and not NVIDIA_TARGET.fullmatch(target))


def at_shape(loaded: LoadedSpec, variant_name: str, variant: Variant, target: str, shape: dict[str, int]) -> Launchable:
    launch = loaded.spec.launch_of(variant)
    return Launchable(
        loaded=loaded, variant_name=variant_name, variant=variant, target=target, shape=shape, backend=backend_for(target, loaded.source_of(variant)[1]),
        grid=[evaluate_int(g, shape, "launch grid") for g in launch.grid],
        block=[evaluate_int(b, shape, "launch block") for b in launch.block or [1]],  # no block: Triton's, set by its build
        shared_bytes=evaluate_int(launch.shared_bytes, shape, "shared_bytes"),
    )


def specialize(launchable: Launchable, params: Mapping[str, str | int]) -> tuple[Launchable, dict[str, str | int]]:
    """Split tuning parameters: a shape variable re-evaluates the launch geometry; anything else is a define.

    A shape variable that would change an argument (a buffer's shape, a scalar's value) is refused:
    a session's inputs and references hold for one problem, and tuning searches how to run it, not what it is.
    """
    geometry = {name: value for name, value in params.items() if name in launchable.shape}
    defines = {name: value for name, value in params.items() if name not in launchable.shape}
    if not geometry:
        return launchable, defines
    shape = dict(launchable.shape)
    for name, value in geometry.items():
        if isinstance(value, bool) or not str(value).lstrip("-").isdigit():
            raise HyperloomError(f"the shape variable {name} takes an integer, got {value!r}", f"give {name} an integer (in --params, or as a tuning candidate)")
        shape[name] = int(value)
    for arg in launchable.loaded.spec.args:
        before, after = argument_value(arg, launchable.shape), argument_value(arg, shape)
        if before != after:
            raise HyperloomError(
                f"tuning {', '.join(geometry)} changes argument {arg.name} ({before} → {after}), not only the launch",
                "tune only shape variables that steer the launch geometry (threads, rows, …); pick the problem with the shape index",
            )
    return at_shape(launchable.loaded, launchable.variant_name, launchable.variant, launchable.target, shape), defines


def build_with(launchable: Launchable, workspace: Workspace, params: Mapping[str, str | int]) -> tuple[Launchable, TargetBuild]:
    """Tuning parameters applied (specialize) and the variant compiled with them: the launch and its build."""
    if launchable.loaded.source_of(launchable.variant)[1] == "triton":
        return triton_build_with(launchable, workspace, dict(params))
    specialized, defines = specialize(launchable, params)
    build = build_for(specialized, workspace, defines)
    _, language = specialized.loaded.source_of(specialized.variant)
    if not build.ok or language == "c":
        return specialized, build
    merged = {**resolved_defines(specialized.variant, specialized.shape), **defines}
    symbols = exported_functions(workspace.root / build.code_object) if language == "cpp" else [k.name for k in build.kernels]
    return replace(specialized, symbol=resolve_symbol(specialized.variant.entry, merged, symbols)), build


def build_for(launchable: Launchable, workspace: Workspace, defines: Mapping[str, str | int] | None = None) -> TargetBuild:
    """Compile the variant (cached), its defines overridden by `defines`; a template entry through its instance source."""
    source, language = launchable.loaded.source_of(launchable.variant)
    if is_template(launchable.variant.entry):
        source = instance_source(source, launchable.variant.entry, language, workspace.state_dir("instances"))
    merged = {**resolved_defines(launchable.variant, launchable.shape), **(defines or {})}
    return compile_kernel(
        CompileRequest(source=workspace.relative(source), targets=[launchable.target], language=language,
                       defines=[f"{k}={v}" for k, v in merged.items()]),
        workspace,
    ).builds[0]


def stage_input_set(launchable: Launchable, input_set: str, folder: Path, *, timeout_s: float = REFERENCE_TIMEOUT_S) -> list[Path]:
    """Draw an input set into `folder` (in_<arg>.npy) with the reference's outputs (ref_<arg>.npy, computed in a
    worker process with `timeout_s`); returns the references."""
    loaded, shape = launchable.loaded, launchable.shape
    folder.mkdir(parents=True, exist_ok=True)
    inputs = draw_inputs(loaded.spec, shape, input_set)
    for name, array in inputs.items():
        np.save(folder / f"in_{name}.npy", array)
    return stage_references(loaded, shape, inputs, folder, timeout_s=timeout_s)


def check_input_set(
    launchable: Launchable, code_object: str, input_set: str, inputs: Path, outputs: Path, workspace: Workspace, *,
    timeout_s: float, device: int | None, reference_set: Path | None = None, runner: TrialRunner = run_trial,
) -> InputSetVerdict:
    """Run the kernel once on poisoned outputs with the inputs staged in `inputs`, then gate its outputs.

    References come from `inputs` (ref_<arg>.npy, the spec's tolerance) or from a frozen `reference_set`.
    `runner` runs the launch (default a fresh worker process; tune passes its warm workers). A GPU kernel's
    outputs meet a frozen set inside its worker (tools/gate/outputs.py); other outputs are written to
    `outputs` and gated here.
    """
    names = [a.name for a in output_buffers(launchable.loaded.spec)]
    case_names = [f"{input_set}:{n}" for n in names]
    in_worker = output_gate(reference_set, names, case_names, workspace) if reference_set is not None and launchable.backend not in HOST_BACKENDS else None
    outputs.mkdir(parents=True, exist_ok=True)
    trial = runner(
        TrialRequest(backend=launchable.backend, code_object=str(workspace.root / code_object), entry=launchable.symbol or launchable.variant.entry,
                     args=arg_specs(launchable, inputs, outputs), grid=launchable.grid, block=launchable.block,
                     shared_bytes=launchable.shared_bytes, launch_args=launchable.variant.launch_args, mode="correctness",
                     timing_code_object=_helpers_if_built(launchable, workspace), gate=in_worker),
        timeout_s=timeout_s, device=device,
    )
    if trial.status != "OK":
        return InputSetVerdict(input_set=input_set, passed=False, summary=f"{trial.status}: {trial.message}", status=trial.status, elapsed_s=trial.elapsed_s)
    if in_worker is not None:
        if trial.gate is None:
            return InputSetVerdict(input_set=input_set, passed=False, status="ERROR", elapsed_s=trial.elapsed_s,
                                   summary="ERROR: the worker ran the launch but returned no verdict on its outputs (a worker of another version?)")
        gate = trial.gate
    else:
        against = (
            {"reference_set": workspace.relative(reference_set)} if reference_set is not None
            else {"references": [workspace.relative(inputs / f"ref_{n}.npy") for n in names], **launchable.loaded.spec.tolerance.model_dump()}
        )
        gate = run_gate(GateRequest(candidates=[workspace.relative(outputs / f"out_{n}.npy") for n in names], case_names=case_names, **against), workspace)
    return InputSetVerdict(
        input_set=input_set, passed=gate.passed, summary=gate.summary, elapsed_s=trial.elapsed_s,
        nan=any(not c.passed and c.nan_count.candidate > c.nan_count.reference for c in gate.cases),
    )


def _helpers(launchable: Launchable, workspace: Workspace) -> str | None:
    """The device helpers' code object (timing.hip) for the launch's target; None on a CPU backend."""
    return None if launchable.backend in HOST_BACKENDS else str(workspace.root / timing_kernels(launchable.target, workspace))


def _helpers_if_built(launchable: Launchable, workspace: Workspace) -> str | None:
    """The helpers for a warm worker's kept inputs; None also when they do not build (a correctness trial does not need them)."""
    try:
        return _helpers(launchable, workspace)
    except HyperloomError:
        return None


def time_kernel(
    launchable: Launchable, code_object: str, inputs: Path, timing: Timing, workspace: Workspace, *, timeout_s: float, device: int | None,
    runner: TrialRunner = run_trial,
) -> TrialResult:
    """Time the kernel on the inputs staged in `inputs`, in a worker process (`runner`'s)."""
    helpers = _helpers(launchable, workspace)
    return runner(
        TrialRequest(backend=launchable.backend, code_object=str(workspace.root / code_object), entry=launchable.symbol or launchable.variant.entry,
                     args=arg_specs(launchable, inputs, None), grid=launchable.grid, block=launchable.block,
                     shared_bytes=launchable.shared_bytes, launch_args=launchable.variant.launch_args, mode="timing", timing=timing, timing_code_object=helpers),
        timeout_s=timeout_s, device=device,
    )


_TIMING_BUILDS: dict[tuple[str, Path], str] = {}


def timing_kernels(target: str, workspace: Workspace) -> str:
    """The timing loop's device helpers (kernels/runtime/timing.hip: the read flush, the spin) built for `target`
    (cached); their workspace-relative code object. Remembered per process while the code object is there: a
    tune session times thousands of candidates with the same helpers."""
    known = _TIMING_BUILDS.get((target, workspace.root))
    if known is not None and (workspace.root / known).is_file():
        return known
    _TIMING_BUILDS[(target, workspace.root)] = built = _build_timing_kernels(target, workspace)
    return built


def _build_timing_kernels(target: str, workspace: Workspace) -> str:
    staged = stage_shipped_file(workspace.state_dir("runtime"), "runtime", TIMING_SOURCE)
    build = compile_kernel(CompileRequest(source=workspace.relative(staged), targets=[target]), workspace).builds[0]
    if not build.ok:
        raise HyperloomError(f"the timing helpers (read flush, spin) do not build for {target}: {build.summary}",
                             "fix the toolchain for this target (compile_kernel on kernels/runtime/timing.hip shows the error)")
    return build.code_object


def _bench_spec(request: BenchRequest, workspace: Workspace, timing: Timing, progress: ProgressFn | None) -> BenchResult:
    loaded = load_spec(workspace.resolve(request.spec, what="spec"), workspace)
    spec = loaded.spec
    prepared = prepare(loaded, request.variant, request.target, request.shape)
    require_backend(prepared.backend, request.target, request.device)  # one clear error before any compile or input
    launchable, build = build_with(prepared, workspace, request.params)
    variant_name, shape, backend = launchable.variant_name, launchable.shape, launchable.backend
    if not build.ok:
        raise HyperloomError(f"{spec.name}/{variant_name} does not build for {request.target}: {build.summary}", "fix the build with compile_kernel first")
    run_dir = workspace.state_dir("bench", f"{spec.name}-{variant_name}-{request.target}-s{request.shape}-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S%f}")
    state_before = device_state(backend, request.device)

    verdicts: list[InputSetVerdict] = []
    input_sets = launchable.input_sets if request.adversarial else ["seeded"]
    for index, input_set in enumerate(input_sets):
        folder = run_dir / input_set
        stage_input_set(launchable, input_set, folder, timeout_s=request.timeout_s)
        verdicts.append(check_input_set(launchable, build.code_object, input_set, folder, folder, workspace, timeout_s=request.timeout_s, device=request.device))
        if progress is not None:
            progress(index + 1, len(input_sets) + 1)
    kernel = wall = None
    flush_bytes = cache_bytes = late_reps = 0
    device_name = ""
    failed = [v for v in verdicts if not v.passed]
    if not failed:
        trial = time_kernel(launchable, build.code_object, run_dir / "seeded", timing, workspace, timeout_s=request.timeout_s, device=request.device)
        if trial.status != "OK":
            failed.append(InputSetVerdict(input_set="timing", passed=False, summary=f"{trial.status}: {trial.message}", status=trial.status))
        else:
            kernel, wall = summarize(trial.kernel_s), summarize(trial.wall_s)
            flush_bytes, cache_bytes, device_name, late_reps = trial.flush_bytes, trial.cache_bytes, trial.device, trial.late_reps
            write_bytes_atomic(run_dir / "samples.json", json.dumps({"kernel_s": trial.kernel_s, "wall_s": trial.wall_s}).encode())
    if progress is not None:
        progress(len(input_sets) + 1, len(input_sets) + 1)
    bytes_moved = evaluate_int(spec.metric.bytes, shape, "metric bytes") if spec.metric.bytes is not None else None
    flops = evaluate_int(spec.metric.flops, shape, "metric flops") if spec.metric.flops is not None else None
    ok = not failed and kernel is not None
    summary = (
        f"{spec.name}/{variant_name} on {device_name or request.target}: median {kernel.median_s * 1e6:.2f} us"
        + (f", {significant(bytes_moved / kernel.median_s / 1e9)} GB/s" if bytes_moved else "")
        + (f", {significant(flops / kernel.median_s / 1e12)} TFLOP/s" if flops else "")
        + f" (n={kernel.n}, CV {kernel.cv:.2%}); gate passed on {len(verdicts)} input set(s)"
        + (f"; {late_reps} rep(s) were enqueued after their flush could have ended, so host launch latency may be in them" if late_reps else "")
        if ok
        else "no speed: " + "; ".join(f"{v.input_set}: {v.summary}" for v in failed)
    )
    return BenchResult(
        ok=ok, summary=summary, name=spec.name, variant=variant_name, target=request.target, backend=backend,
        device=device_name, shape=shape, params=dict(request.params), gate=verdicts, kernel=kernel if ok else None, wall=wall if ok else None,
        kernel_to_wall=kernel.median_s / wall.median_s if ok and wall.median_s > 0 else None,
        bytes_moved=bytes_moved, flops=flops,
        bandwidth_gbps=bytes_moved / kernel.median_s / 1e9 if ok and bytes_moved else None,
        tflops=flops / kernel.median_s / 1e12 if ok and flops else None,
        flush_bytes=flush_bytes, flush_mode=request.flush_mode, cache_bytes=cache_bytes, late_reps=late_reps, state_before=state_before,
        state_after=device_state(backend, request.device), artifacts=workspace.relative(run_dir),
        evidence=measured(
            "bench", inputs_sha256=combine_digests([sha256_file(workspace.root / build.code_object), sha256_json(request.model_dump()), sha256_json(shape)]),
            target=request.target, device=device_name or None, toolchain={build.compiler.name: build.compiler.version or "unknown", "numpy": np.__version__},
        ),
    )


def arg_specs(launchable: Launchable, inputs: Path, outputs: Path | None) -> list[ArgSpec]:
    """Arguments of one launch: inputs read from `inputs`, outputs written to `outputs` (None: not written back)."""
    shape = launchable.shape
    specs = []
    for arg in launchable.loaded.spec.args:
        if not isinstance(arg, BufferArg):
            specs.append(ArgSpec(name=arg.name, kind="scalar", dtype=arg.dtype, value=scalar_value(arg, shape)))
            continue
        dims = buffer_shape(arg, shape)
        nbytes = int(np.prod(dims, dtype=np.int64)) * np.dtype(arg.dtype).itemsize
        specs.append(
            ArgSpec(
                name=arg.name, kind="buffer", dtype=arg.dtype, nbytes=nbytes, role=arg.role, shape=list(dims),
                input_path=str(inputs / f"in_{arg.name}.npy") if arg.role in ("input", "inout") else None,
                output_path=str(outputs / f"out_{arg.name}.npy") if outputs is not None and arg.role in ("output", "inout") else None,
            )
        )
    return specs if launchable.triton is None else launchable.triton.arg_specs(specs, launchable.grid)
