"""workload_freeze: run the baseline twice, each in its own worker, and freeze its outputs under the tolerance
declared now, before any candidate; refuse a baseline that disagrees with itself beyond that tolerance (the
tolerance must cover the workload's own noise), naming the outputs that drift and by how much."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.workload import MODULE_FUNCTION, file_function
from hyperloom.tools.workload import generated
from hyperloom.tools.workload.frozen import session_folder, spread, write_frozen
from hyperloom.tools.workload.models import FrozenOutput, OutputTolerance, WorkloadFreezeRequest, WorkloadFreezeResult
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess

RUNS = 2


def describe_target(workload: str, args: list[str], knobs: dict[str, str], workspace: Workspace) -> Target:
    """The workload as a worker loads it: a script, a file's function or a module's function; anything else is refused."""
    in_file = file_function(workload, workspace)
    if in_file is not None:
        return Target(in_file, "function", tuple(args), dict(knobs))
    if workload.endswith(".py"):
        if knobs:
            raise HyperloomError("a script has no knobs", "give the workload as file.py:function (a factory) to use knobs")
        return Target(str(workspace.resolve(workload, kind="file", what="workload")), "script", tuple(args), {})
    if not MODULE_FUNCTION.match(workload):
        raise HyperloomError(f"workload {workload[:80]!r} is neither script.py, file.py:function nor module:function",
                             "pass e.g. 'bench/decoder.py:build' or 'mypackage.workloads:decoder' (importable from the workspace root)")
    return Target(workload, "function", tuple(args), dict(knobs))


def refusal(failure: WorkloadFailure, workload: str, timeout_s: float) -> HyperloomError:
    """A worker failure as the caller reads it, with the next step for each way it can end."""
    if failure.status == "TIMEOUT":
        return HyperloomError(f"the workload {workload} did not finish {failure.message}", f"make its step shorter, or raise timeout_s above {timeout_s:g}")
    if failure.error_type in ("ModuleNotFoundError", "ImportError", "AttributeError", "FileNotFoundError") and failure.step == "build":
        return HyperloomError(f"the workload {workload} cannot be loaded: {failure.message}", "check the module path (importable from the workspace root) and the function's name")
    if failure.status == "CRASH":
        return HyperloomError(f"the workload {workload} crashed its worker ({failure.message})", "run it alone to find the crash (an extension's segfault, or out of memory)")
    if failure.status == "EXITED":
        return HyperloomError(f"the workload {workload} ended its process ({failure.message})", "a step must return; remove the exit")
    return HyperloomError(f"the workload {workload} raised in {failure.message}", "fix the error (run it alone to see the traceback), then freeze again")


def freeze_workload(request: WorkloadFreezeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadFreezeResult:
    target = describe_target(request.workload, request.args, request.knobs, workspace)
    name = request.name or re.sub(r"[^A-Za-z0-9_.-]", "_", request.workload.rsplit("/", 1)[-1])[:80]
    folder = session_folder(name, workspace)
    if (folder / "workload.json").exists() and not request.overwrite:
        raise HyperloomError(f"workload session {name!r} is frozen already", "pass overwrite to freeze it again, or another name")
    runs = folder / "runs" / "freeze"
    if runs.exists():
        shutil.rmtree(runs)
    infos, saved = [], []
    for index in range(RUNS):
        try:
            with WorkloadProcess(target, [], runs / f"baseline{index}", workspace, request.timeout_s) as process:
                if request.warmup_steps:
                    process.warmup(request.warmup_steps)
                else:
                    process.time(1)
                saved.append(process.outputs(runs / f"baseline{index}"))
                infos.append(process.info)
        except WorkloadFailure as failure:
            raise refusal(failure, request.workload, request.timeout_s) from None
        if progress is not None:
            progress(index + 1, RUNS)
    info = infos[0]
    if saved[0].keys() != saved[1].keys() or any(saved[0][k]["shape"] != saved[1][k]["shape"] or saved[0][k]["dtype"] != saved[1][k]["dtype"] for k in saved[0]):
        raise HyperloomError("the workload's outputs changed names, shapes or dtypes between two runs of the same baseline: "
                             + "; ".join(f"{k}: {saved[0].get(k)} vs {saved[1].get(k)}" for k in sorted(set(saved[0]) | set(saved[1])) if saved[0].get(k) != saved[1].get(k))[:400],
                             "make outputs() return the same tensors each run (fixed seeds and inputs)")
    tolerances = _tolerances(request, info.get("tolerances") or {}, list(saved[0]))
    outputs, drift = [], []
    paired = generated.companions(saved[0])
    grouped = generated.grouped(paired)  # judged as candidates will be: the near-tie gate, below
    loaded = {}
    for output, meta in saved[0].items():
        a, b = loaded[output] = tuple(np.load(runs / f"baseline{i}" / f"{output}.npy", allow_pickle=False) for i in range(RUNS))
        apart = spread(a, b, tolerances[output])
        limit = 1 - tolerances[output].match if a.dtype.kind in "iu" else 1.0
        if apart > limit + 1e-12 and output not in grouped:
            drift.append(f"{output}: {_spread_text(a, b, apart)}")
        outputs.append(FrozenOutput(name=output, shape=meta["shape"], dtype=meta["dtype"], original_dtype=meta["original_dtype"], tolerance=tolerances[output],
                                    spread=apart, sha256=sha256_file(runs / "baseline0" / f"{output}.npy")))
    for tokens, (ids, logprobs) in paired.items():
        runs_of = [generated.Generated(*(loaded[n][i] for n in (tokens, ids, logprobs))) for i in range(RUNS)]
        agree, detail = generated.judge(runs_of[1], runs_of[0], tolerances[logprobs])
        if not agree:
            drift.append(f"{tokens} with its top-k log-probabilities: {detail}")
    if drift:
        raise HyperloomError("the baseline disagrees with itself beyond the declared tolerance (two runs, same inputs): " + "; ".join(drift)[:600],
                             "make the workload deterministic (seeds, deterministic algorithms), or declare a tolerance that covers its own noise "
                             "(atol/rtol, token_match, per_output)")
    knobs = {k: str(v) for k, v in target.knobs.items()}
    write_frozen(folder, runs / "baseline0", target, tolerances, info["knobs"], info["vendor"], workspace)
    evidence = measured("workload_freeze", device=info.get("device") or host_device(), target=info["vendor"], toolchain=info.get("toolchain"),
                        inputs_sha256=combine_digests([sha256_json([target.workload, target.args, knobs])] + [o.sha256 for o in outputs]
                                                      + ([sha256_file(Path(info["module_file"]))] if info.get("module_file") and Path(info["module_file"]).is_file() else [])))
    gated = bool(outputs)
    summary = (f"froze {len(outputs)} output(s) of {request.workload} ({', '.join(o.name for o in outputs)}); two baseline runs agree within the tolerance"
               if gated else f"{request.workload} has no outputs(): candidates can be timed against it, not gated")
    return WorkloadFreezeResult(ok=True, summary=summary, name=name, folder=workspace.relative(folder), workload=request.workload, knobs=knobs,
                                declared_knobs=info["knobs"], outputs=outputs, gated=gated, vendor=info["vendor"], evidence=evidence)


def _tolerances(request: WorkloadFreezeRequest, declared: dict[str, dict[str, float]], names: list[str]) -> dict[str, OutputTolerance]:
    """Each output's tolerance: the request's atol/rtol/token_match, under what the workload declares for it (its
    `tolerances`), under the request's per_output; a name no output has is refused."""
    for source, given in (("per_output", request.per_output), ("the workload's `tolerances`", declared)):
        unknown = set(given) - set(names)
        if unknown:
            raise HyperloomError(f"{source} names {', '.join(sorted(unknown))}, which outputs() does not return (it returns {', '.join(names) or 'nothing'})",
                                 "name outputs as outputs() returns them")
    default = {"atol": request.atol, "rtol": request.rtol, "match": request.token_match}
    tolerances = {}
    for name in names:
        try:
            extra = set(declared.get(name, {})) - set(OutputTolerance.model_fields)
            if extra:
                raise TypeError(f"it has {', '.join(sorted(map(str, extra)))}")
            tolerances[name] = OutputTolerance(**{**default, **declared.get(name, {}), **request.per_output.get(name, {})})
        except (ValidationError, TypeError) as error:
            raise HyperloomError(f"the workload's `tolerances` for {name} is not a tolerance: {str(error).splitlines()[0][:200]}",
                                 "give {atol, rtol, match} with atol, rtol >= 0 and 0 < match <= 1") from None
    return tolerances


def _spread_text(a: np.ndarray, b: np.ndarray, apart: float) -> str:
    if a.shape != b.shape:
        return f"shapes {list(a.shape)} and {list(b.shape)}"
    if a.dtype.kind in "iu":
        return f"{apart:.4f} of elements differ"
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return f"max |a - b| {float(np.nanmax(diff)) if diff.size else 0:.3g} ({apart:.3g}x the tolerance)"
