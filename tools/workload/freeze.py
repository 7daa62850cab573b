"""workload_freeze: run the baseline twice, each in its own worker, and freeze its outputs under the tolerance
declared now, before any candidate; refuse a baseline that disagrees with itself beyond that tolerance (the
tolerance must cover the workload's own noise), naming the outputs that drift and by how much."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workload_source import refuse_factory_module_as_script, refuse_unknown_knobs
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.workload import MODULE_FUNCTION, file_function
from hyperloom.tools.workload.gate import derived, generated, twin
from hyperloom.tools.workload.alone import alone_command
from hyperloom.tools.workload.gate.frozen import session_folder, spread, write_frozen
from hyperloom.tools.workload.models import (FrozenOutput, OutputTolerance, StepCosts, WorkloadBenchRequest, WorkloadFreezeRequest,
                                             WorkloadFreezeResult)
from hyperloom.tools.workload.gate.pinned import pin
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess, enter_together
from hyperloom.tools.workload.step_costs import measured_costs
from hyperloom.tools.workload.timed import draw_seeds
from hyperloom.tools.workload.wire import Info, SavedOutput, TeacherRequest, TwinAnswer

RUNS = 2
DRIFT_SEEDS = WorkloadBenchRequest.model_fields["pairs"].default
"""Fresh inputs beside the frozen ones on which a decoder's top-k log-probability drift (the baseline's against its
twin's) is measured at freeze, the largest kept: as many as a default bench gates a candidate on (one a pair), so the
baseline's worst prompt is looked for among as many as the candidate's is. The drift is one worst element, and measured
on the frozen prompt alone (or on three fresh ones) it undercounted what fresh prompts show (docs/decisions.md: Fresh
prompts at freeze)."""


def describe_target(workload: str, args: list[str], knobs: dict[str, str], workspace: Workspace) -> Target:
    """The workload as a worker loads it: a script, a file's function or a module's function; anything else is refused."""
    in_file = file_function(workload, workspace)  # a factory the file does not define is refused there
    if in_file is not None:
        where, _, function = in_file.rpartition(":")
        refuse_unknown_knobs(Path(where), function, knobs)
        return Target(in_file, "function", tuple(args), dict(knobs))
    if workload.endswith(".py"):
        path = workspace.resolve(workload, kind="file", what="workload")
        refuse_factory_module_as_script(path, workload)
        if knobs:
            raise HyperloomError("a script has no knobs", "give the workload as file.py:function (a factory) to use knobs")
        return Target(str(path), "script", tuple(args), {})
    if not MODULE_FUNCTION.match(workload):
        raise HyperloomError(f"workload {workload[:80]!r} is neither script.py, file.py:function nor module:function",
                             "pass e.g. 'bench/decoder.py:build' or 'mypackage.workloads:decoder' (importable from the workspace root)")
    return Target(workload, "function", tuple(args), dict(knobs))


def refusal(failure: WorkloadFailure, workload: str, timeout_s: float, target: Target | None = None) -> HyperloomError:
    """A worker failure as the caller reads it, with the next step for each way it can end; where the workload's own
    code failed, the one-line command that runs it alone (with `target`, its knobs and arguments too)."""
    alone = alone_command(workload, dict(target.knobs) if target else {},
                          target.kind if target else "function" if ":" in workload else "script", tuple(target.args) if target else ())
    missing = MISSING_MODULE.search(failure.message) if failure.error_type in ("ModuleNotFoundError", "ImportError") else None
    if failure.status == "TIMEOUT":
        return HyperloomError(f"the workload {workload} did not finish {failure.message}",
                              f"make its step shorter, or raise timeout_s above {timeout_s:g}")
    if missing is not None and failure.step == "build":
        return HyperloomError(f"the workload {workload} imports {missing.group(1)}, which this Python ({sys.executable}) does not have: "
                              f"{failure.message}",
                              install_hint(missing.group(1)))
    if failure.error_type in ("ModuleNotFoundError", "ImportError", "AttributeError", "FileNotFoundError") and failure.step == "build":
        return HyperloomError(f"the workload {workload} cannot be loaded: {failure.message}",
                              "check the module path (importable from the workspace root) and the function's name")
    if failure.status == "CRASH":
        return HyperloomError(f"the workload {workload} crashed its worker ({failure.message})", "run it alone to find the crash (an "
                              f"extension's segfault, or out of memory): {alone}")
    if failure.status == "EXITED":
        return HyperloomError(f"the workload {workload} ended its process ({failure.message})", "a step must return; remove the exit")
    return HyperloomError(f"the workload {workload} raised in {failure.message}", "fix the error, then freeze again; to see its whole "
                          f"traceback, run it alone in the workspace root: {alone}")


MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
TORCH_CPU = "pip install torch==2.13.0 (a CPU wheel), or pip install torch --index-url https://download.pytorch.org/whl/cpu"


def install_hint(module: str) -> str:
    """How to give this Python a module a workload imports: torch as a CPU wheel (a CUDA or ROCm build for a GPU)."""
    top = module.split(".")[0]
    if top == "torch":
        return f"install torch into this Python: {TORCH_CPU}; on a GPU, the CUDA or ROCm build pytorch.org names for it"
    return f"install it into this Python (pip install {top}, if that is its package's name), or run hyperloom from the Python that has it"


def freeze_workload(request: WorkloadFreezeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadFreezeResult:
    target = describe_target(request.workload, request.args, request.knobs, workspace)
    name = request.name or re.sub(r"[^A-Za-z0-9_.-]", "_", request.workload.rsplit("/", 1)[-1])[:80]
    folder = session_folder(name, workspace)
    if (folder / "workload.json").exists() and not request.overwrite:
        raise HyperloomError(f"workload session {name!r} is frozen already",
                             "pass overwrite to freeze it again (--overwrite on the CLI), or another name")
    runs = folder / "runs" / "freeze"
    if runs.exists():
        shutil.rmtree(runs)
    infos: list[Info] = []
    saved: list[dict[str, SavedOutput]] = []
    k = derived.rule_k(request)
    costs: StepCosts | None = None
    seeds: list[int] = []
    twin_run: TwinAnswer | None = None
    twin_failure = ""
    chosen: list[str] = []
    # the runs' workers built at once, each closed once its run is done (its twin, made in place, then has the memory)
    processes = [WorkloadProcess(target, [], runs / f"baseline{index}", workspace, request.timeout_s) for index in range(RUNS)]
    try:
        enter_together(processes)
        for index, process in enumerate(processes):
            if request.warmup_steps:
                process.warmup(request.warmup_steps)
            else:
                process.time(1)
            teacher = _teacher(saved[0], runs / "baseline0") if index and chosen else {}
            saved.append(process.outputs(runs / f"baseline{index}", teacher))
            infos.append(process.info)
            if index == 0:
                costs = measured_costs(process, runs / "costs")
                _refuse_reserved(list(saved[0]))
                _refuse_misfit_groups(list(saved[0]), runs / "baseline0", process.info.get("not_greedy"))
                chosen = derived.derived_outputs(list(saved[0]), k, request, process.info["tolerances"])
                if process.info["has_inputs"] and generated.companions(chosen):
                    seeds = draw_seeds(DRIFT_SEEDS)
                    process.seeded_outputs(runs / "seeds" / "baseline", seeds,
                                           {tokens: ids for tokens, (ids, _) in generated.companions(chosen).items()})
            elif chosen:
                try:
                    twin_run = process.twin(runs / "twin", teacher)
                except WorkloadFailure as failure:
                    twin_failure = failure.message
                seeds = _twin_seeded(process, runs / "seeds", seeds, saved[0]) if twin_run is not None else []
            process.close()  # its memory free before the next run's twin; on a failure, the finally below
            if progress is not None:
                progress(index + 1, RUNS)
    except WorkloadFailure as failure:
        raise refusal(failure, request.workload, request.timeout_s, target) from None
    finally:
        for process in processes:
            process.close()
    info = infos[0]
    teachers = [n for n in saved[1] if n.endswith(twin.TEACHER)]
    for teacher_output in teachers:  # scored in the second run only: frozen beside the first run's outputs
        shutil.copyfile(runs / "baseline1" / f"{teacher_output}.npy", runs / "baseline0" / f"{teacher_output}.npy")
    second = {n: m for n, m in saved[1].items() if n not in teachers}
    if (saved[0].keys() != second.keys()
            or any(saved[0][k]["shape"] != second[k]["shape"] or saved[0][k]["dtype"] != second[k]["dtype"] for k in saved[0])):
        raise HyperloomError("the workload's outputs changed names, shapes or dtypes between two runs of the same baseline: "
                             + "; ".join(f"{k}: {saved[0].get(k)} vs {second.get(k)}" for k in sorted(set(saved[0]) | set(second))
                                         if saved[0].get(k) != second.get(k))[:400],
                             "make outputs() return the same tensors each run (fixed seeds and inputs)")
    tolerances = _tolerances(request, info["tolerances"], [n for n in saved[0] if n not in chosen])
    twins: dict[str, Path] = {}
    if chosen:
        if twin_run is None:
            raise HyperloomError(f"no twin of {request.workload} (float64 or float32) could be made ({twin_failure[:300]}), and no "
                                 f"tolerance is declared for {', '.join(chosen[:6])}",
                                 "declare one: atol/rtol (or token_match), per_output, or the workload's `tolerances`")
        metas = {**saved[0], **{n: saved[1][n] for n in teachers}}
        drift_runs = [(runs / "seeds" / "baseline" / f"seed{i}", runs / "seeds" / "twin" / f"seed{i}") for i in range(len(seeds))]
        tolerances.update(derived.tolerances(runs / "baseline0", runs / "twin", chosen, metas, k or twin.DEFAULT_K, twin_run["dtype"],
                                             drift_runs))
        twins = {twin.twin_name(n): runs / "twin" / f"{n}.npy" for n, t in tolerances.items() if t.derived is not None and n in metas
                 and not n.endswith(generated.LOGPROBS)}
    outputs, drift = _judge_spread(runs, saved[0], tolerances)
    if drift:
        raise HyperloomError("the baseline disagrees with itself beyond the declared tolerance (two runs, same inputs): "
                             + "; ".join(drift)[:600],
                             "make the workload deterministic (seeds, deterministic algorithms), or declare a tolerance that covers its "
                             "own noise (atol/rtol, token_match, per_output)")
    outputs += [FrozenOutput(name=n, shape=saved[1][n]["shape"], dtype=saved[1][n]["dtype"], original_dtype=saved[1][n]["original_dtype"],
                             tolerance=tolerances[n], spread=0.0,
                             sha256=sha256_file(runs / "baseline0" / f"{n}.npy")) for n in teachers if n in tolerances]
    knobs = {k: str(v) for k, v in target.knobs.items()}
    pinned = pin(info["module_file"] if target.kind == "function" else target.workload, workspace)
    write_frozen(folder, runs / "baseline0", target, {n: tolerances[n] for n in (*saved[0], *teachers) if n in tolerances}, info["knobs"],
                 info["vendor"], workspace, twins, pinned)
    evidence = measured("workload_freeze", device=info["device"] or host_device(), target=info["vendor"], toolchain=info["toolchain"],
                        inputs_sha256=combine_digests([sha256_json([target.workload, target.args, knobs])] + [o.sha256 for o in outputs]
                                                      + list(pinned.values())))
    gated = bool(outputs)
    rule = (f"; {len([o for o in outputs if o.tolerance.derived])} judged by the twin rule (error against the {twin_run['dtype']} twin <= "
            f"{k:g}x the baseline's)"
            + (f" ({twin_run['twin_note']})" if twin_run.get("twin_note") else "") if twin_run is not None else "")
    floats = any(o.dtype.startswith(("float", "bfloat")) for o in outputs)
    summary = (f"froze {len(outputs)} output(s) of {request.workload} ({', '.join(o.name for o in outputs)}); two baseline runs agree "
               f"within the tolerance{rule}"
               + ("" if floats or not gated else "; integer outputs only (tokens alone)")
               if gated else f"{request.workload} has no outputs(): candidates can be timed against it, not gated")
    summary += "".join(f"; {note}" for note in (costs.notes if costs else []))
    return WorkloadFreezeResult(ok=True, summary=summary, name=name, folder=workspace.relative(folder), workload=request.workload,
                                knobs=knobs, declared_knobs=info["knobs"], outputs=outputs, gated=gated, costs=costs, vendor=info["vendor"],
                                evidence=evidence)


def _refuse_reserved(names: list[str]) -> None:
    reserved = [n for n in names if twin.is_twin(n) or n.endswith(twin.TEACHER)]
    if reserved:
        raise HyperloomError(f"outputs() names {reserved[0]!r}: names ending in {twin.TWIN} or {twin.TEACHER} are the gate's own",
                             "rename that output")


def _refuse_misfit_groups(names: list[str], run: Path, not_greedy: str | None) -> None:
    """Refused: tokens named with top-k companions (the near-tie gate's opt-in) that do not fit them, e.g. a beam
    search's lists, one per beam ([batch x beams, steps, k]) beside the chosen sequences ([batch, prompt + steps]); or
    that came from a generate that is not greedy (`not_greedy`, why): the gate reads each token as its step's argmax,
    parting only at a near tie and going on with the reference model's picks, so an honest lever that flips a sampled
    draw was refused (a held-out sampled Llama: compile and sdpa_math refused after a parting)."""
    for tokens, (ids, logprobs) in generated.companions(names).items():
        if not_greedy:
            raise HyperloomError(f"{tokens} came from a generate that does not decode greedily ({not_greedy}), and the near-tie gate named "
                                 f"by {ids} and {logprobs} judges greedy decoding (each token its step's argmax, a parting only at a "
                                 "near tie)",
                                 "generate greedily to gate the tokens (do_sample=False, num_beams=1, no logits processor: the model's "
                                 "work per token is the same), or rename the top-k lists to have the tokens judged exactly")
        arrays = [np.load(run / f"{n}.npy", allow_pickle=False) for n in (tokens, ids, logprobs)]
        error = generated.shape_error("the baseline", *arrays)
        if error:
            raise HyperloomError(f"{tokens}, {ids} and {logprobs} name a generated group (the near-tie gate) that does not fit: {error}",
                                 "return one top-k list per generated token of each row, or rename the lists to have the tokens judged "
                                 "exactly and the log-probabilities by the twin rule")


def _twin_seeded(process: WorkloadProcess, folder: Path, seeds: list[int], first: dict[str, Any]) -> list[int]:
    """The twin's outputs on `seeds` in `folder`/twin, each seed's baseline tokens (in `folder`/baseline) teacher-forced
    by it; none where the twin could not take them: the drift is then measured on the frozen inputs alone."""
    if not seeds:
        return []
    try:
        process.seeded_outputs(folder / "twin", seeds,
                               teacher=[_teacher(first, folder / "baseline" / f"seed{i}") for i in range(len(seeds))])
    except WorkloadFailure:
        return []
    return seeds


def _teacher(first: dict[str, Any], run: Path) -> dict[str, TeacherRequest]:
    """What the second run and the twin score: the first run's tokens of each generated group (twin.teacher_request)."""
    groups = generated.companions(first)
    return {tokens: twin.teacher_request(*(np.load(run / f"{n}.npy", allow_pickle=False) for n in (tokens, ids)))
            for tokens, (ids, _) in groups.items()}


def _judge_spread(runs: Path, saved: dict[str, Any], tolerances: dict[str, OutputTolerance]) -> tuple[list[FrozenOutput], list[str]]:
    """Each output of the two baseline runs, judged as candidates will be (the twin rule, the near-tie gate, the
    declared tolerance): the frozen outputs, and the drifts beyond the tolerance."""
    outputs, drift, loaded = [], [], {}
    paired = generated.companions(saved)
    grouped = generated.grouped(paired)
    for output, meta in saved.items():
        a, b = loaded[output] = tuple(np.load(runs / f"baseline{i}" / f"{output}.npy", allow_pickle=False) for i in range(RUNS))
        rule = tolerances[output].derived
        apart = derived.self_spread(a, b, rule) if rule is not None and output not in grouped else spread(a, b, tolerances[output])
        limit = 1 - tolerances[output].match if a.dtype.kind in "iu" and rule is None else 1.0
        if apart > limit + 1e-12 and output not in grouped:
            drift.append(f"{output}: {_spread_text(a, b, apart)}")
        outputs.append(FrozenOutput(name=output, shape=meta["shape"], dtype=meta["dtype"], original_dtype=meta["original_dtype"],
                                    tolerance=tolerances[output], spread=apart, sha256=sha256_file(runs / "baseline0" / f"{output}.npy")))
    for tokens, (ids, logprobs) in paired.items():
        runs_of = [generated.Generated(*(loaded[n][i] for n in (tokens, ids, logprobs))) for i in range(RUNS)]
        agree, detail = generated.judge(runs_of[1], runs_of[0], tolerances[logprobs])
        if not agree:
            drift.append(f"{tokens} with its top-k log-probabilities: {detail}")
    return outputs, drift


def _tolerances(request: WorkloadFreezeRequest, declared: dict[str, dict[str, float]], names: list[str]) -> dict[str, OutputTolerance]:
    """Each output's tolerance: the request's atol/rtol/token_match, under what the workload declares for it (its
    `tolerances`), under the request's per_output; a name no output has is refused."""
    for source, given in (("per_output", request.per_output), ("the workload's `tolerances`", declared)):
        unknown = set(given) - set(names)
        if unknown:
            raise HyperloomError(f"{source} names {', '.join(sorted(unknown))}, which outputs() does not return (it returns "
                                 f"{', '.join(names) or 'nothing'})",
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
