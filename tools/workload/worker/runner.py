"""The worker side of a workload: runs in a warm worker process (hyperloom.core.warm), one workload per process.

The controller (tools/workload/process.py) calls these entries in order: `build_guarded` (`build`: import the workload, apply the
candidate's levers, call its factory; between two looks at the timing path, tamper.py), `warmup`, then any of `time_steps` (and `save_timed`
after it), `outputs` and `engagement`. The built workload lives in worker_state.py's STATE until the process ends (worker_build.py builds
it); a worker built with `keep` keeps the workload as built and can `serve` the next candidate a fresh copy of it with that candidate's
levers (those that act on the built workload), so a 1.2B model is built once, not per candidate.

The contract (skill/hyperloom-kernel-optimizer/workload.md): `module:function` or `file.py:function` names a factory; its keyword arguments
with defaults are the workload's knobs (a `Literal[...]` annotation lists their values); it returns an object with `step()` (one unit of
work, the same each call: a prefill, a decode of N tokens, a training step on fixed data) and optionally `outputs()` (the tensors to gate,
from the last step: a tensor, a list or a dict of them), `inputs(seed)` (make the inputs the next step() consumes from `seed`: new values,
the same shapes; without it the inputs are fixed and a memo cannot be told from a gain), `model` (the torch module levers such as
torch.compile wrap) and `points` (the workload's sweep points, recorded). A factory may also return a bare callable, and a plain script is
one step: both are timed, nothing is gated.

What the candidate's code cannot own (tools/workload/timed.py, the controller's side): the seeds, sent in each
`time_steps` call one per step and drawn after the build; the clock (the controller's, around the call; this
module's walls are the worker's account, checked against it); the reference outputs (the reference worker's on the
same seeds). Each timed step's window covers step() and outputs() materialized on the host, synchronized on a GPU.
"""

from __future__ import annotations

import copy
import gc
import inspect
import os
import re
import sys
import time
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

from hyperloom.core.collector import paused_gc
from hyperloom.core.factory import WorkloadContractError, declared_knobs, knob_values, load_factory, load_file
from hyperloom.tools.workload.worker import calls, tamper, teacher, worker_build
from hyperloom.tools.workload.worker.teacher import exact_float32, twin_dtypes
from hyperloom.tools.workload.worker.levers import kernel_route, model_changes
from hyperloom.tools.workload.levers import UNREVIEWED_KINDS, unserved
from hyperloom.tools.workload import wire
from hyperloom.tools.workload.wire import teacher_request
from hyperloom.tools.workload.worker.window import kept, spin, timed_window
from hyperloom.tools.workload.worker.worker_state import GUARD, STATE

OUTPUT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$")  # an output is saved as NAME.npy


def build(payload: wire.BuildRequest) -> wire.Built:
    """Import the workload, apply the levers that act before it is built, build it, apply the rest, wrap its step.
    With `keep`, the workload as built is kept and the levers act on a copy of it, so `serve` can give the next
    candidate a fresh copy without building again (`reusable` says whether the copy could be made)."""
    os.chdir(payload["root"])
    if payload["root"] not in sys.path:
        sys.path.insert(0, payload["root"])
    torch = _torch()
    STATE.levers, STATE.folder = list(payload["levers"]), payload["folder"]
    STATE.gpu = bool(torch is not None and torch.cuda.is_available())
    for lever in STATE.levers:
        if lever["kind"] == "setting":
            worker_build.setting(torch, lever["value"])
        elif lever["kind"] == "overrides":
            load_file(lever["value"], f"hyperloom_overrides_{abs(hash(lever['value']))}")
    knobs: dict[str, Any] = {}
    defaults: dict[str, str] = {}
    if payload["kind"] == "script":
        STATE.step, STATE.module_file = worker_build.script_step(payload["workload"], list(payload.get("args", []))), payload["workload"]
    else:
        factory = load_factory(payload["workload"])
        knobs = declared_knobs(factory)
        defaults = {name: str(p.default) for name, p in inspect.signature(factory).parameters.items() if name in knobs}
        STATE.module_file = inspect.getsourcefile(factory)
        obj = factory(**knob_values(knobs, payload["knobs"]))
        keep = payload.get("keep") and not unserved(lever["kind"] for lever in STATE.levers)
        worker_build.bind(worker_build.kept_copy(obj, torch) if keep else obj, payload["workload"])
    worker_build.apply_levers(torch)
    vendor = "cpu" if not STATE.gpu else ("rocm" if getattr(torch.version, "hip", None) else "cuda")
    return {"vendor": vendor, "device": torch.cuda.get_device_name(0) if STATE.gpu else None,
            "torch": str(torch.__version__) if torch is not None else None,
            "toolchain": worker_build.toolchain(torch), "knobs": {k: v for k, v in knobs.items()}, "knob_defaults": defaults,
            "has_outputs": STATE.outputs is not None, "module_file": STATE.module_file, "points": worker_build.points(STATE.obj),
            "tolerances": worker_build.tolerances(STATE.obj), "pid": os.getpid(), "model_facts": model_changes.facts(torch, STATE.obj),
            "reusable": STATE.kept is not None, "not_reusable": STATE.not_kept}


def serve(payload: wire.ServeRequest) -> wire.ServeAnswer:
    """Serve another candidate in this worker: drop the last one (its copy of the workload, its captured graph, dynamo's
    compiled code and counters, the settings it turned on), then apply `levers` to a fresh copy of the workload as
    built, its settings first. Only levers that act on the built workload or on a setting put back after
    (levers.SERVED_KINDS): an environment variable or an overrides module cannot be undone."""
    if STATE.kept is None:
        raise WorkloadContractError("this worker kept no copy of the workload (built without keep, or it could not be copied)")
    foreign = unserved(lever["kind"] for lever in payload["levers"])
    if foreign:
        raise WorkloadContractError(f"a lever of kind {foreign[0]} changes the process, not the workload: build a fresh worker for it")
    torch = _torch()
    release({})
    worker_build.restore_settings()
    STATE.levers, STATE.folder = list(payload["levers"]), payload["folder"]
    for lever in STATE.levers:
        if lever["kind"] == "setting":
            worker_build.setting(torch, lever["value"])
    worker_build.bind(copy.deepcopy(STATE.kept), "the kept workload")
    worker_build.apply_levers(torch)
    GUARD.inputs = getattr(STATE.obj, "inputs", None) if STATE.outputs is not None else None
    GUARD.methods = _methods()
    return {"model_facts": model_changes.facts(torch, STATE.obj), "has_inputs": GUARD.inputs is not None, "tampered": _tampered(),
            "pid": os.getpid()}


def release(payload: wire.Empty) -> wire.Empty:
    """Drop the last candidate (its copy of the workload, its captured graph, dynamo's compiled code, CUDA graphs and
    counters) and give its device memory back, so that a kept worker waiting for its next candidate holds only the
    workload as built. Idempotent: with nothing held since the last release (the kept worker releases when a trial
    ends, then serve releases again) dynamo is not reset twice. On a GPU the device is synchronized first: a fault the
    last candidate left (sticky, as an illegal address is) raises here, and the caller closes this worker."""
    if STATE.obj is None and STATE.step is None and STATE.graph is None:
        return {}
    torch = _torch()
    STATE.obj = STATE.step = STATE.outputs = STATE.graph = None
    STATE.leg_outputs = {}
    STATE.warm, STATE.channels_last, STATE.fused, STATE.quantized, STATE.routes = False, None, None, None, {}
    gc.collect()
    if torch is not None:
        dynamo = getattr(torch, "_dynamo", None)
        if dynamo is not None:
            dynamo.reset()
            dynamo.utils.counters.clear()
        if STATE.gpu:
            torch.cuda.synchronize()  # a sticky device fault (an illegal address) raises here: the worker is not kept
            torch.cuda.empty_cache()
    return {}


def warmup(payload: wire.WarmupRequest) -> wire.WarmupAnswer:
    """Run the warm-up steps as timed steps run (window.py): a compile happens here, and whatever the window's own code loads on first use
    (the digests' kernels) loads here, not in the first timed window. Then capture the graph if a lever asks for one."""
    torch = _torch()
    walls = [timed_window(_run_step, _named_outputs if STATE.outputs is not None else None, torch, STATE.gpu).wall_s
             for _ in range(int(payload["steps"]))]
    STATE.warm = True
    captured = False
    if any(lever["kind"] == "graph" for lever in STATE.levers):
        _capture()
        captured = True
    return {"wall_s": walls, "graph_captured": captured}


def build_guarded(payload: wire.BuildRequest) -> wire.BuildAnswer:
    """`build`, between two looks at the timing path (tamper.py): its functions before the overrides module is imported,
    then the workload's step/outputs/inputs as bound once built. `tampered` names what the build replaced."""
    torch = _torch()  # imported first, so that torch's timing functions are in the snapshot taken before the candidate's code
    if torch is not None and any(lever["kind"] in UNREVIEWED_KINDS for lever in payload["levers"]):
        # proof of work's modules too (tamper.WORKER_MODULES), where code Hyperloom did not write will run and its step
        # be weighed here; 0.18 s of imports (pydantic's model machinery) a catalog candidate's worker need not pay
        import hyperloom.tools.workload.worker.profiled_step  # noqa: F401
        import hyperloom.tools.profile.kineto  # noqa: F401
        import hyperloom.tools.workload.work  # noqa: F401
    GUARD.path = tamper.snapshot()
    info = build(payload)
    inputs = getattr(STATE.obj, "inputs", None) if STATE.outputs is not None else None
    GUARD.inputs = inputs if callable(inputs) else None
    GUARD.methods = _methods()
    return {**info, "has_inputs": GUARD.inputs is not None, "tampered": _tampered()}


def ping(payload: wire.Empty) -> wire.Empty:
    """Nothing: the controller times this call to know the round trip it takes off each timed leg."""
    return {}


def time_steps(payload: wire.TimeStepsRequest) -> wire.TimeStepsAnswer:
    """Time one step per seed of `seeds` (drawn by the controller), or `steps` steps on fixed inputs, each in its own
    window (window.py: step(), outputs() and their digests, the device synchronized before and after). inputs(seed)
    runs before its step's window and the device is synchronized after it, then on a GPU a short spin (window.spin,
    `spin_s`): their times are measured apart (`inputs_s`), not in the step, and what they run is traced (calls.py: `inputs_calls`, the
    leg's names; the reference's worker traces its own alike, so the tracer's cost falls on both). The collector is held for the leg
    (timeit's habit: its pauses land in a random step). Each step's outputs stay on their device (every step's with `keep_all`, else the
    last's) for `save_timed` to copy the one the controller picks. `elapsed_s`: the worker's account of the call."""
    began = time.perf_counter()
    seeds = payload.get("seeds")
    steps = len(seeds) if seeds is not None else int(payload["steps"])
    if seeds is not None and GUARD.inputs is None:
        raise WorkloadContractError("the controller sent input seeds, but the workload has no inputs(seed) (or no outputs())")
    torch = _torch()
    told: dict[str, list[Any]] = {key: []
                                  for key in ("wall_s", "step_wall_s", "device_s", "step_device_s", "inputs_s", "spin_s", "digests")}
    STATE.leg_outputs = {}
    keep_all = bool(payload.get("keep_all", True))
    ran: set[str] = set()
    with paused_gc():
        for index in range(steps):
            if seeds is not None:
                drawn_s, spun_s, names = _traced_draw(int(seeds[index]), torch)
                told["inputs_s"].append(drawn_s)
                ran.update(names)
            else:
                spun_s = _spun(torch)
            told["spin_s"].append(spun_s)
            window = timed_window(_run_step, _named_outputs if STATE.outputs is not None else None, torch, STATE.gpu)
            told["wall_s"].append(window.wall_s)
            told["step_wall_s"].append(window.step_wall_s)
            if window.device_s is not None:
                told["device_s"].append(window.device_s)
                told["step_device_s"].append(window.step_device_s)
            told["digests"].append(window.digests)
            if keep_all or index == steps - 1:
                STATE.leg_outputs[index] = kept(window.outputs)
                if STATE.gpu:
                    torch.cuda.synchronize()  # the copy is the harness's: done before the next inputs(seed) is timed
    return {**told, "inputs_calls": sorted(ran), "tampered": _tampered(), "elapsed_s": time.perf_counter() - began}


def save_timed(payload: wire.SaveTimedRequest) -> wire.SaveTimedAnswer:
    """Copy one timed step's outputs (`step`, of those the last leg kept; default its last) to the host and save them as
    one .npy each in `folder`: after the controller's clock stopped, since copying and writing them is Hyperloom's work,
    not the step's. No workload code runs here; np.save and what it calls are on the tamper snapshot's timing path,
    checked again after."""
    if STATE.outputs is None:
        return {"outputs": {}, "tampered": _tampered()}
    index = payload.get("step")
    if index is None:
        index = max(STATE.leg_outputs) if STATE.leg_outputs else None
    if index not in STATE.leg_outputs:
        raise WorkloadContractError(f"step {index} of the last leg was not kept (kept: {sorted(STATE.leg_outputs)})")
    arrays = {name: _to_numpy(value, name) for name, value in STATE.leg_outputs[index].items()}
    return {"outputs": _save(Path(payload["folder"]), arrays), "tampered": _tampered()}


def outputs(payload: wire.OutputsRequest) -> wire.OutputsAnswer:
    """Save what outputs() returns (from the last step) as one .npy per output in `folder`; with `teacher` (tokens
    name -> {ids, prompt}), also the logits the model gives those tokens (NAME.teacher, teacher forcing); `not_greedy`:
    why the model's last generate did not decode greedily, when it did not."""
    if STATE.outputs is None:
        return {"outputs": {}}
    arrays = _materialized()
    arrays.update({f"{tokens}.teacher": _to_numpy(logits) for tokens, logits in _teacher_logits(payload.get("teacher")).items()})
    model = getattr(STATE.obj, "model", None)
    reason = teacher.not_greedy_last(model) if model is not None else None
    decoded = {"not_greedy": reason} if reason else {}
    return {"outputs": _save(Path(payload["folder"]), arrays), **decoded}


def seeded_outputs(payload: wire.SeededOutputsRequest) -> wire.SeededOutputsAnswer:
    """One step after inputs(seed) for each of `seeds`, its outputs saved in `folder`/seed{i} (as `outputs` saves them):
    the freeze's measure of the baseline's own drift on inputs beside the frozen ones, on the baseline and on its twin;
    with `teacher_own` the baseline's tokens scored by itself, with `teacher` (one request a seed) the baseline's
    tokens of that seed scored by the twin: NAME.teacher beside them, the teacher rule's error over fresh inputs."""
    if GUARD.inputs is None or STATE.outputs is None:
        raise WorkloadContractError("seeded outputs need the workload's inputs(seed) and outputs()")
    folder = Path(payload["folder"])
    scored = payload.get("teacher") or [None] * len(payload["seeds"])  # per seed: tokens name -> {ids, prompt}, another's tokens
    own = payload.get("teacher_own") or {}  # tokens name -> its top-k ids' name: this worker's own tokens, scored by itself
    for index, seed in enumerate(payload["seeds"]):
        GUARD.inputs(int(seed))
        _one_step()
        arrays = _materialized()
        requests = scored[index] or {tokens: teacher_request(arrays[tokens][0], arrays[ids][0]) for tokens, ids in own.items()
                                     if tokens in arrays and ids in arrays}
        arrays.update({f"{tokens}.teacher": _to_numpy(logits) for tokens, logits in _teacher_logits(requests).items()})
        _save(folder / f"seed{index}", arrays)
    return {"seeds": len(payload["seeds"])}


def score(payload: wire.ScoreRequest) -> wire.ScoreAnswer:
    """The logits this worker's model gives other tokens (`teacher`: name -> {ids, prompt}), saved as NAME.scored.npy
    in `folder`, with the model's EOS and pad ids: the reference's judgement of a candidate's own continuation.
    `inputs` "built": the tokens came from the workload's inputs as built (a candidate's first outputs), scored beside
    this worker's copy of them; otherwise this worker's last inputs may not be theirs (an encoder-decoder's: not scored)."""
    scored = _teacher_logits(payload.get("teacher"), "built" if payload.get("inputs") == "built" else None)
    _save(Path(payload["folder"]), {f"{tokens}.scored": _to_numpy(logits) for tokens, logits in scored.items()})
    config = getattr(getattr(STATE.obj, "model", None), "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    return {"scored": list(scored), "eos": [int(e) for e in (eos if isinstance(eos, list | tuple) else [] if eos is None else [eos])],
            "pad": getattr(config, "pad_token_id", None)}


def twin(payload: wire.OutputsRequest) -> wire.TwinAnswer:
    """Make the built baseline its own twin, in place: the model's weights and the workload's tensors upcast to float32
    (float64 on a CPU), inputs cast on their way into the model; then one step and its outputs saved as `outputs`
    saves them. The derived tolerance measures every output against these (tools/workload/gate/twin.py). On a CPU a
    float64 step that raises is taken again in float32 and said (`twin_note`): transformers' mixture-of-experts layers
    call torch's grouped_mm, which has no float64 (held-out Mixtral and Qwen2-MoE froze with no twin at all)."""
    torch = _torch()
    model = getattr(STATE.obj, "model", None)
    if torch is None or not isinstance(model, torch.nn.Module):
        raise WorkloadContractError("the workload has no `model` attribute holding a torch.nn.Module, so no twin of it (float64 or "
                                    "float32) can be made")
    narrow = next(((name, p.dtype) for name, p in model.named_parameters() if not p.dtype.is_floating_point), None)
    if narrow is not None:
        raise WorkloadContractError(f"the model cannot be upcast: its parameter {narrow[0]} is {str(narrow[1]).removeprefix('torch.')} (a "
                                    "quantized or custom-dtype model)")
    floats = {p.dtype for p in model.parameters() if p.dtype.is_floating_point}
    dtypes = twin_dtypes(torch, floats, STATE.gpu)
    itself = floats == {torch.float32}  # a float32 twin would be the model
    exact_float32(torch)
    cast = {"to": dtypes[0]}  # what the hook casts the model's inputs to: the twin's dtype
    model.register_forward_pre_hook(lambda _module, args, kwargs: (teacher.upcast(torch, args, cast["to"]),
                                                                   teacher.upcast(torch, kwargs, cast["to"])), with_kwargs=True)
    note = {}
    for dtype in dtypes:
        cast["to"] = dtype
        try:
            model.to(dtype)
            STATE.obj.__dict__.update({key: teacher.upcast(torch, value, dtype) for key, value in vars(STATE.obj).items()
                                       if key != "model"})
            _one_step()
            break
        except Exception as exc:  # noqa: BLE001 - float64 missing from a kernel the model calls, or no memory for it: the float32 twin next
            if dtype is dtypes[-1]:
                raise
            if STATE.gpu:
                torch.cuda.empty_cache()
            note = {"twin_note": f"a float64 twin raised ({type(exc).__name__}: {str(exc)[:160]}): the twin is float32"
                                 + (", the model's own dtype, so any reordering reads as error: declare a tolerance if honest levers "
                                    "are refused" if itself else "")}
    return {**outputs(payload), "dtype": str(dtype).removeprefix("torch."), **note}


def trace(payload: wire.TraceRequest) -> wire.TraceAnswer:
    """Profile `steps` steps (after one under the profiler's warm-up) of the workload as built, its levers in place and
    warmed up (compiled, graph captured, the decode loop installed): the stack's own kernels, recorded as profile's
    capture records an eager run (tools/profile/capture.py), so a profile of the optimized stack ranks what runs; with
    the bytes each routed kernel reads a step (`kernel_bytes`: a GEMV's weights), so its bandwidth can be read off."""
    if _torch() is None:
        raise WorkloadContractError("a profile needs torch in the workload's Python")
    from hyperloom.tools.profile.capture import record

    from hyperloom.tools.workload.worker.levers.decode_loop import COUNTS

    loop_before = COUNTS.snapshot()
    report = record(lambda: _one_step()[0], 1, int(payload["steps"]), payload["trace"], payload["key_averages"], STATE.gpu)
    kv_bytes = COUNTS.kv_bytes_per_step(loop_before)  # the decode loop's replayed steps: their KV read, on top of the weights
    return {**report,
            "kernel_bytes": {kernel: n for routed in STATE.routes.values() for kernel, n in (routed.get("kernel_bytes") or {}).items()},
            **({"kv_read_bytes_per_replay": kv_bytes} if kv_bytes is not None else {})}


def engagement(payload: wire.EngagementRequest) -> wire.EngagementAnswer:
    """What actually ran in one step profiled as a timed step runs (inputs(`seed`) when given, step, outputs on the
    host: what the controller's clock times; profiled_step.py): op and kernel names with their counts; with `trace`,
    the Chrome trace with shapes and the model's parameter bytes (proof of work); dynamo's compiled graphs (all, and
    those compiled in this step), whether the graph replayed, TunableOp's results file."""
    torch = _torch()
    evidence: dict[str, Any] = {"ops": {}, "kernels": {}}
    seed = payload.get("seed") if GUARD.inputs is not None else None
    replaced = any(lever["kind"] == "overrides" for lever in STATE.levers)
    if replaced:
        from hyperloom.tools.workload.worker import overrides

        before = overrides.calls()  # the replacements' calls in the profiled step below
    looped = any(lever["kind"] == "generate" for lever in STATE.levers)
    if looped:
        from hyperloom.tools.workload.worker.levers.decode_loop import COUNTS

        loop_before = COUNTS.snapshot()
    cache_before = model_changes.CACHE.snapshot()
    routes_before = kernel_route.snapshots(list(STATE.routes))
    if torch is None:
        _one_step()
    else:
        from hyperloom.tools.workload.worker.profiled_step import parameter_bytes, profiled

        counters = getattr(getattr(getattr(torch, "_dynamo", None), "utils", None), "counters", None)
        graphs_before = int(counters["stats"].get("unique_graphs", 0)) if counters is not None else 0
        def as_timed() -> None:
            timed_window(_run_step, _named_outputs if STATE.outputs is not None else None, torch, STATE.gpu)

        if seed is not None:  # drawn before the profile, as before a timed window: the step's work is weighed apart from the inputs'
            _drawn(int(seed), torch)
        _spun(torch)
        evidence["parameter_bytes"] = parameter_bytes(torch, STATE.obj)
        evidence.update(profiled(as_timed, STATE.gpu, payload.get("trace"), evidence["parameter_bytes"]))
        if counters is not None:
            evidence["compiled_graphs"] = int(counters["stats"].get("unique_graphs", 0))
            evidence["graphs_compiled_in_step"] = evidence["compiled_graphs"] - graphs_before  # a warmed-up step that compiles: recompiles
            evidence["graph_breaks"] = int(sum(counters["graph_break"].values()))
        if STATE.gpu and any(lever["name"] == "tunableop" for lever in STATE.levers):
            tunable = torch.cuda.tunable
            evidence["tunableop_enabled"] = bool(tunable.is_enabled())
            if hasattr(tunable, "write_file"):  # torch before 2.10; later ones write at exit and list what they tuned
                tunable.write_file()
            evidence["tunableop_results"] = len(tunable.get_results()) if hasattr(tunable, "get_results") else 0
            evidence["tunableop_files"] = sorted(p.name for p in Path(STATE.folder).glob("tunableop_results*.csv") if p.stat().st_size > 0)
    evidence["graph_replayed"] = STATE.graph is not None
    if replaced:
        evidence["override_calls"] = {target: count - before.get(target, 0) for target, count in overrides.calls().items()}
        evidence["override_kernels"] = overrides.kernels()
        evidence["wrapper_overhead_us"] = overrides.wrapper_overhead_us()
    if looped:
        evidence["decode_loop"] = COUNTS.since(loop_before)
    if any(lever["kind"] == "cache" for lever in STATE.levers):
        evidence["static_cache"] = {key: count - cache_before[key] for key, count in model_changes.CACHE.snapshot().items()}
    if STATE.channels_last is not None:
        evidence["channels_last"] = STATE.channels_last
    if STATE.fused is not None:
        evidence["fused_projections"] = STATE.fused
    if STATE.quantized is not None:
        evidence["weight_only"] = STATE.quantized
    for value, routed in STATE.routes.items():
        evidence[value] = kernel_route.evidence(value, routed, routes_before)
    return evidence


# ----------------------------------------------------------------------------------------------------------------
def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _step_context(stances_too: bool = True) -> Any:
    """What the levers put around each step: the attention backend, the compiler's stance, a CUDA-graph step mark.
    Without `stances_too` the backend only: teacher forcing runs the model on other shapes than a step, and compiling
    for them is no recompilation the skip_guard_eval stance should refuse (it RAISED every compiled decoder on a CPU)."""
    sdpa = next((lever["value"] for lever in STATE.levers if lever["kind"] == "sdpa"), None)
    stances = {lever["value"] for lever in STATE.levers if lever["kind"] == "stance"} if stances_too else set()
    if sdpa is None and not stances:
        return nullcontext()
    import torch

    stack = ExitStack()
    if sdpa is not None:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        stack.enter_context(sdpa_kernel(getattr(SDPBackend, sdpa)))
    if "skip_guard_eval" in stances and STATE.warm:  # the warm-up compiles with the guards; timed steps skip them
        stack.enter_context(torch.compiler.set_stance("default", skip_guard_eval_unsafe=True))
    if "cudagraph_step_begin" in stances:
        torch.compiler.cudagraph_mark_step_begin()
    return stack


def _one_step(events: bool = False) -> tuple[float, float | None]:
    """One synchronized step: (wall seconds, device seconds between events around it or None)."""
    assert STATE.step is not None
    torch = _torch() if STATE.gpu else None
    if torch is not None:
        torch.cuda.synchronize()
    start = end = None
    if events and torch is not None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began = time.perf_counter()
    if start is not None:
        start.record()
    _run_step()
    if end is not None:
        end.record()
    if torch is not None:
        torch.cuda.synchronize()
    wall_s = time.perf_counter() - began
    return wall_s, (start.elapsed_time(end) / 1e3 if start is not None and end is not None else None)


def _run_step() -> None:
    """One step as the levers run it: inside their context, the captured graph replayed where one was."""
    with _step_context():
        STATE.graph.replay() if STATE.graph is not None else STATE.step()


def _named_outputs() -> dict[str, Any]:
    assert STATE.outputs is not None
    return _named(STATE.outputs())


def _drawn(seed: int, torch: Any) -> float:
    """inputs(seed), the device synchronized after it (an input copied in or drawn on the device is done before a
    window opens): its seconds on the worker's clock."""
    began = time.perf_counter()
    GUARD.inputs(seed)
    if STATE.gpu:
        torch.cuda.synchronize()
    return time.perf_counter() - began


def _spun(torch: Any) -> float:
    """On a GPU the spin that brings its clocks back up before a window (window.spin), synchronized: its seconds."""
    if not STATE.gpu:
        return 0.0
    began = time.perf_counter()
    spin(torch)
    torch.cuda.synchronize()
    return time.perf_counter() - began


def _traced_draw(seed: int, torch: Any) -> tuple[float, float, list[str]]:
    """_drawn and _spun under calls.traced: (their seconds each, what they ran)."""
    took: list[float] = []
    names = calls.traced(lambda: took.extend((_drawn(seed, torch), _spun(torch))))
    return took[0], took[1], names


def _capture() -> None:
    """Capture one step in a CUDA/HIP graph, after warm-up on a side stream as torch's graph docs require."""
    import torch

    assert STATE.step is not None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), _step_context():
        for _ in range(3):
            STATE.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with _step_context(), torch.cuda.graph(graph):
        STATE.step()
    graph.replay()  # a capture records the kernels without running them: the step's outputs exist after the first replay
    torch.cuda.synchronize()
    STATE.graph = graph


def _teacher_logits(requests: dict[str, Any] | None, source: teacher.Source | None = "last") -> dict[str, Any]:
    """teacher.logits for the built workload's model, with the step's attention backend around the forward (not its
    stances: the whole sequence is a shape no step ran) and compiled code where the candidate has a compile lever;
    `source`: the recorded generate input the tokens came from (teacher.Source; "last": this worker's own last step)."""
    torch = _torch()
    model = getattr(STATE.obj, "model", None)
    if torch is None or not isinstance(model, torch.nn.Module):
        return {}
    compiled = any(lever["kind"] == "compile" for lever in STATE.levers)
    return teacher.logits(torch, model, requests, lambda: _step_context(stances_too=False), compiled, source)


def _named(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        bad = [str(k) for k in value if not OUTPUT_NAME.match(str(k))]
        if bad:
            raise WorkloadContractError(f"outputs() names {bad[0][:80]!r}: an output's name is a file name here (letters, digits, "
                                        "'_', '.', '-', up to 80, not starting with '.' or '-')")
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list | tuple):
        return {f"output{i}": v for i, v in enumerate(value)}
    return {"output": value}


def _to_numpy(value: Any, name: str = "an output") -> tuple[Any, str]:
    """(a numpy array the gate reads, the original dtype): bfloat16 and float8 widened to float32 exactly, bool to uint8.
    `name`: the output's, said where it cannot be gated."""
    import numpy as np

    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        original = str(value.dtype).removeprefix("torch.")
        tensor = value.detach().cpu()
        if tensor.dtype.is_floating_point and tensor.element_size() < 4 and tensor.dtype != torch.float16:
            tensor = tensor.float()
        if tensor.dtype == torch.bool:
            tensor = tensor.to(torch.uint8)
        return tensor.contiguous().numpy(), original
    array = np.asarray(value)
    if array.dtype == bool:
        array = array.astype(np.uint8)
    if array.dtype.kind not in "fiu":
        raise WorkloadContractError(f"outputs() {_defined_at(STATE.outputs)}returns {name!r} as {type(value).__name__} of dtype "
                                    f"{array.dtype}, which cannot be gated (numbers only): return it as a tensor or a numeric array, or "
                                    "leave it out of outputs()")
    return array, str(array.dtype)


def _defined_at(method: Any) -> str:
    """'(mymodel.py:31) ' for a user's method, relative to the worker's working folder (the workspace root), or ''."""
    try:
        function = inspect.unwrap(getattr(method, "__func__", method))
        return f"({os.path.relpath(inspect.getsourcefile(function))}:{inspect.getsourcelines(function)[1]}) "
    except (TypeError, OSError, ValueError):
        return ""


def _methods() -> tamper.Snapshot:
    held = {f"runner.STATE.{name}": tamper.bound(fn)
            for name, fn in (("step", STATE.step), ("outputs", STATE.outputs), ("inputs", GUARD.inputs)) if fn is not None}
    return {**tamper.methods(STATE.obj), **held}


def _tampered() -> list[str]:
    return tamper.changed(GUARD.path, tamper.snapshot()) + tamper.changed(GUARD.methods, _methods())


def _materialized() -> dict[str, tuple[Any, str]]:
    """outputs() as numpy arrays on the host (name -> (array, original dtype)), the device synchronized after the copies."""
    if STATE.outputs is None:
        return {}
    arrays = {name: _to_numpy(value, name) for name, value in _named(STATE.outputs()).items()}
    if STATE.gpu:
        _torch().cuda.synchronize()
    return arrays


def _save(folder: Path, arrays: dict[str, tuple[Any, str]]) -> dict[str, dict[str, Any]]:
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    saved = {}
    for name, (array, original) in arrays.items():
        np.save(folder / f"{name}.npy", array)
        saved[name] = {"shape": list(array.shape), "dtype": str(array.dtype), "original_dtype": original}
    return saved
