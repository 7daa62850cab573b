"""bench and bench_command: a kernel from its kernel.yaml gated on every input set, then timed; or any program that
reports its own samples, timed and never gated.

bench_command's program is the caller's: it runs with the caller's rights, in the workspace root, as an
argument list (no shell), its whole process group killed at the timeout. Its last JSON line must hold
samples_s; a command's speed says nothing about its correctness, so nothing is gated.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import signal
import subprocess

import numpy as np

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.figures import significant
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.clocks import device_state
from hyperloom.tools.bench.models import BenchCommandRequest, BenchRequest, BenchResult
from hyperloom.tools.kernelspec.expr import evaluate_int
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.evaluate import InputSet, Plan, evaluate
from hyperloom.tools.pipeline.judging import Against, audit_verdict
from hyperloom.tools.pipeline.launch import prepare
from hyperloom.tools.pipeline.resources import resource_refusal
from hyperloom.tools.pipeline.roof import UNBOUNDED
from hyperloom.tools.pipeline.secret import DrawnMeanwhile
from hyperloom.tools.pipeline.stats import summarize
from hyperloom.tools.pipeline.trial import stage_input_set, staged_set
from hyperloom.tools.runtime.models import HOST_BACKENDS, Timing
from hyperloom.tools.runtime.probe import require_backend


def run_bench(request: BenchRequest, workspace: Workspace, progress: ProgressFn | None = None, *,
              measuring_roof: bool = False) -> BenchResult:
    """Gate the spec's variant on every input set, then time it on secret inputs with its timed launches gated too.
    `measuring_roof`: roofline measuring the roof itself, whose results are not held against the roof they replace."""
    timing = Timing(
        warmup_s=request.warmup_s, min_reps=request.min_reps, max_reps=max(request.max_reps, request.min_reps),
        max_time_s=request.max_time_s, target_ci=request.target_ci, flush_cache=request.flush_cache, flush_mode=request.flush_mode,
    )
    loaded = load_spec(workspace.resolve(request.spec, what="spec"), workspace)
    spec = loaded.spec
    prepared = prepare(loaded, request.variant, request.target, request.shape)
    require_backend(prepared.backend, request.target, request.device)  # one clear error before any compile or input
    launchable, build = build_with(prepared, workspace, request.params)
    variant_name, shape, backend = launchable.variant_name, launchable.shape, launchable.backend
    if not build.ok:
        raise HyperloomError(f"{spec.name}/{variant_name} does not build for {request.target}: {build.summary}",
                             "fix the build with compile_kernel first")
    run_dir = workspace.state_dir("bench",
                                  f"{spec.name}-{variant_name}-{request.target}-s{request.shape}-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S%f}")
    state_before = device_state(backend, request.device)

    names = launchable.input_sets if request.adversarial else ["seeded"]
    sets = [InputSet(name, run_dir / name, run_dir / name) for name in names]
    refused = resource_refusal(launchable, build)
    if refused is not None:
        raise HyperloomError(f"{spec.name}/{variant_name} for {request.target}: resource limit: {refused}",
                             "ask for less shared memory or fewer threads per workgroup")
    secret = DrawnMeanwhile(launchable, workspace, timeout_s=request.timeout_s)  # while the input sets are staged and gated
    try:
        for index, each in enumerate(sets):
            stage_input_set(launchable, each.name, each.inputs, timeout_s=request.timeout_s)
            if progress is not None:
                progress(index + 1, len(sets) + 1)
        audit = audit_verdict([staged_set(launchable, s.name, s.inputs) for s in sets], launchable)
        evaluation = evaluate(launchable, build.code_object, sets, workspace,
                              Plan(timing, request.timeout_s, request.device, keep_going=True),
                              Against(secret, UNBOUNDED if measuring_roof else None, audit))
    finally:
        secret.close()
    trial = evaluation.timing
    if trial is not None:
        write_bytes_atomic(run_dir / "samples.json", json.dumps({"kernel_s": trial.kernel_s, "wall_s": trial.wall_s}).encode())
    if progress is not None:
        progress(len(sets) + 1, len(sets) + 1)
    kernel, wall = (summarize(trial.kernel_s), summarize(trial.wall_s)) if trial is not None else (None, None)
    device_name, late_reps = evaluation.device, trial.late_reps if trial is not None else 0  # refused or not, the worker's device
    bytes_moved = evaluate_int(spec.metric.bytes, shape, "metric bytes") if spec.metric.bytes is not None else None
    flops = evaluate_int(spec.metric.flops, shape, "metric flops") if spec.metric.flops is not None else None
    ok = evaluation.passed and kernel is not None
    summary = (
        f"{spec.name}/{variant_name} on {device_name or request.target}: median {kernel.median_s * 1e6:.2f} us"
        + (f", {significant(bytes_moved / kernel.median_s / 1e9)} GB/s" if bytes_moved else "")
        + (f", {significant(flops / kernel.median_s / 1e12)} TFLOP/s" if flops else "")
        + f" (n={kernel.n}, CV {kernel.cv:.2%}); gate passed on {len(evaluation.verdicts)} input set(s)"
        + (f"; {late_reps} rep(s) were enqueued after their flush could have ended, so host launch latency may be in them" if late_reps
           else "")
        if ok and kernel is not None
        else "no speed: " + "; ".join(f"{v.input_set}: {v.summary}" for v in evaluation.failed)
    )
    return BenchResult(
        ok=ok, summary=summary, name=spec.name, variant=variant_name, target=request.target, backend=backend,
        device=device_name, shape=shape, params=dict(request.params), gate=evaluation.verdicts, checks=evaluation.integrity,
        kernel=kernel if ok else None, wall=wall if ok else None,
        kernel_to_wall=kernel.median_s / wall.median_s if ok and kernel and wall and wall.median_s > 0 else None,
        bytes_moved=bytes_moved, flops=flops,
        bandwidth_gbps=bytes_moved / kernel.median_s / 1e9 if ok and kernel and bytes_moved else None,
        tflops=flops / kernel.median_s / 1e12 if ok and kernel and flops else None,
        flush_bytes=trial.flush_bytes if trial else 0, flush_mode=request.flush_mode, cache_bytes=trial.cache_bytes if trial else 0,
        late_reps=late_reps, state_before=state_before, state_after=device_state(backend, request.device),
        artifacts=workspace.relative(run_dir), evidence=measured(
            "bench", inputs_sha256=combine_digests([sha256_file(workspace.root / build.code_object), sha256_json(request.model_dump()),
                                                    sha256_json(shape)]),
            target=request.target, device=device_name or _unnamed(backend, request.device),
            toolchain={build.compiler.name: build.compiler.version or "unknown", "numpy": np.__version__},
        ),
    )


def _unnamed(backend: str, device: int | None) -> str | None:
    """The evidence's device when no launch reported one: the host for a CPU backend (None), else the GPU asked for."""
    return None if backend in HOST_BACKENDS else f"{backend} device {device or 0} (no launch reported its name)"


REPORT_EXAMPLE = '{"samples_s": [0.00105, 0.00101, ...], "bytes": 1048576}'


def run_bench_command(request: BenchCommandRequest, workspace: Workspace, progress: ProgressFn | None = None) -> BenchResult:
    del progress  # one program run; it reports nothing along the way
    if any("\x00" in part for part in request.command):
        raise HyperloomError("the command contains a NUL byte", "pass plain argument strings")
    stdout, stderr, returncode = _run(request.command, request.timeout_s, workspace)
    report = next((line for line in reversed(stdout.strip().splitlines()) if line.lstrip().startswith("{")), None)
    if returncode != 0 or report is None:
        raise HyperloomError(
            f"the command exited {returncode} without a JSON result line ({stderr.strip()[-300:] or 'no stderr'})",
            f"print one JSON line such as {REPORT_EXAMPLE} last",
        )
    try:
        data = json.loads(report)
        samples = [float(s) for s in data["samples_s"]]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise HyperloomError(f"the command's last JSON line has no list of numbers samples_s ({str(exc)[:120]})",
                             f"print {REPORT_EXAMPLE}") from exc
    if not samples:
        raise HyperloomError("the command reported no samples", "report at least one sample in samples_s")
    if not all(math.isfinite(s) and s > 0 for s in samples):
        raise HyperloomError("the command reported a sample that is not a positive finite number of seconds",
                             "report each repetition's time in seconds")
    bytes_moved, flops = _count(data, "bytes"), _count(data, "flops")
    kernel = summarize(samples)
    return BenchResult(
        ok=True, summary=f"{' '.join(request.command)[:60]}: median {kernel.median_s * 1e6:.2f} us over {kernel.n} samples (reported "
                         "by the command)",
        name=os.path.basename(request.command[0]), variant=None, target=request.target, backend="command",
        device=str(data.get("device", ""))[:200],
        shape={}, gate=[], kernel=kernel, wall=None, kernel_to_wall=None, bytes_moved=bytes_moved, flops=flops,
        bandwidth_gbps=bytes_moved / kernel.median_s / 1e9 if bytes_moved else None,
        tflops=flops / kernel.median_s / 1e12 if flops else None, flush_bytes=0, cache_bytes=0,
        state_before=None, state_after=None, artifacts=None,
        evidence=measured("bench_command", inputs_sha256=sha256_json({"command": request.command, "report": data}), target=request.target,
                          device=str(data.get("device") or "")[:200] or None),
    )


def _run(command: list[str], timeout_s: float, workspace: Workspace) -> tuple[str, str, int]:
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", cwd=workspace.root, start_new_session=True)
    except FileNotFoundError as exc:
        raise HyperloomError(f"{command[0][:80]!r} was not found",
                             "pass an argument list whose first item is an executable (a name on PATH or a path)") from exc
    except OSError as exc:  # a folder, a file without execute permission, a binary for another machine
        raise HyperloomError(f"{command[0][:80]!r} cannot be run ({exc.strerror})", "pass an executable program as the first item") from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise HyperloomError(f"the command did not finish within {timeout_s:g} s and was killed",
                             "shorten its run or raise timeout_s") from exc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # nothing it started outlives it
        except (ProcessLookupError, PermissionError):
            pass
    return stdout, stderr, proc.returncode


def _count(data: dict, key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise HyperloomError(f"the command's {key} is {str(value)[:40]}, not a count", f"report {key} as a non-negative number")
    return int(value)
