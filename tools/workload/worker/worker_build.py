"""How a workload worker builds its workload (tools/workload/worker/runner.py's build and serve): the factory or script
loaded, the workload as built kept for the next candidates (a deep copy for this one), its step bound, the levers that
act on the built workload applied, and what the build reports (toolchain, points, declared tolerances). Not on the
timed path: the runner's timing functions are the ones the tamper check watches.
"""

from __future__ import annotations

import copy
import runpy
import sys
from collections.abc import Callable
from typing import Any

from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.workload.worker import teacher
from hyperloom.tools.workload.worker.levers import kernel_route, model_changes
from hyperloom.tools.workload.worker.worker_state import STATE


KEPT_SHARE = 0.6  # the built workload and its copy together may hold at most this share of the device's memory


def too_large_to_copy(allocated_bytes: int, total_bytes: int) -> str:
    """Why a built workload holding `allocated_bytes` of a device's `total_bytes` is not kept beside a copy (empty: it
    is): the copy doubles what the model holds, and the candidate still needs room for its own work (a compile, captured
    graphs, a static cache, activations). A 1.2B bf16 decoder (2.5 GB) is kept on an 80 GB GPU; a 30B one is not."""
    if total_bytes <= 0 or 2 * allocated_bytes <= KEPT_SHARE * total_bytes:
        return ""
    return (f"the built workload holds {allocated_bytes / 2**30:.1f} GiB of the device's {total_bytes / 2**30:.0f} GiB: a kept copy beside "
            f"it would leave too little for a candidate's own work (both may hold {KEPT_SHARE:.0%}); each candidate builds its own worker")


def kept_copy(obj: Any, torch: Any = None) -> Any:
    """Keep `obj` as built and return a copy for the candidate; `obj` itself when it cannot be copied or the copy would
    not fit beside it on the GPU (said in not_kept)."""
    if STATE.gpu and torch is not None:
        why = too_large_to_copy(int(torch.cuda.memory_allocated()),
                                int(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory))
        if why:
            STATE.not_kept = why
            return obj
    try:
        copied = copy.deepcopy(obj)
    except Exception as exc:  # noqa: BLE001 - any failure to copy a user's object means: build afresh for each candidate
        STATE.not_kept = f"the built workload cannot be deep-copied ({type(exc).__name__}: {str(exc)[:200]})"
        return obj
    STATE.kept = obj
    return copied


def bind(obj: Any, workload: str) -> None:
    STATE.obj = obj
    if callable(getattr(obj, "step", None)):
        STATE.step = obj.step
        STATE.outputs = obj.outputs if callable(getattr(obj, "outputs", None)) else None
    elif callable(obj):
        STATE.step, STATE.outputs = obj, None
    else:
        raise WorkloadContractError(f"{workload} returned {type(obj).__name__}, which has no step() and is not callable")


def apply_levers(torch: Any) -> None:
    """The levers that act on the built workload, in their order: the model's own changes first (fused projections, then
    weight-only quantization, the memory format, the kernels' routes: compile acts on the changed model), then compile and the decode loop,
    then the static cache (its count wraps whatever generate is now). Last, the model's generate records its input (an encoder-decoder's
    encoder input, a decoder's padded prompt: for teacher forcing its tokens; teacher.py), around whatever the levers put in
    place: the decode loop, which replaces generate, would not call a recorder under it (a padded held-out Llama's
    static_cache + decode_loop was refused, its tokens scored without their mask)."""
    for lever in STATE.levers:
        if lever["kind"] == "fusion":
            from hyperloom.tools.workload.worker.levers import fused_projections

            STATE.fused = fused_projections.fuse(torch, getattr(STATE.obj, "model", None)).as_dict()
    for lever in STATE.levers:
        if lever["kind"] == "quantize":  # after the fusion: a fused group's layer is quantized too
            from hyperloom.tools.workload.worker.levers import weight_only

            STATE.quantized = weight_only.quantize(torch, getattr(STATE.obj, "model", None), lever["value"])
        elif lever["kind"] == "layout":
            STATE.channels_last = model_changes.channels_last(torch, STATE.obj)
        elif lever["kind"] == "kernel":
            STATE.routes[lever["value"]] = kernel_route.route_module(lever["value"]).route(torch, getattr(STATE.obj, "model", None))
    for lever in STATE.levers:
        if lever["kind"] == "compile":
            compile_model(torch, lever["value"])
        elif lever["kind"] == "generate":
            from hyperloom.tools.workload.worker.levers import decode_loop

            decode_loop.install(getattr(STATE.obj, "model", None), compiled=STATE.gpu)
    for lever in STATE.levers:
        if lever["kind"] == "cache":
            model_changes.static_cache(getattr(STATE.obj, "model", None))
    teacher.record_generate_inputs(getattr(STATE.obj, "model", None))


def toolchain(torch: Any) -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    if torch is not None:
        versions["torch"] = str(torch.__version__)
        for key in ("cuda", "hip"):
            value = getattr(torch.version, key, None)
            if value:
                versions[key] = str(value)
    for package in ("transformers", "triton"):
        module = sys.modules.get(package)
        if module is not None and getattr(module, "__version__", None):
            versions[package] = str(module.__version__)
    return versions





def script_step(path: str, args: list[str]) -> Callable[[], None]:
    sys.argv = [path, *args]

    def run_script() -> None:
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise
    return run_script








def points(obj: Any) -> list[Any]:
    points = getattr(obj, "points", None)
    return list(points) if isinstance(points, list | tuple) else []


def tolerances(obj: Any) -> dict[str, Any]:
    """The tolerances the workload declares for its outputs (`tolerances`: output name -> {atol, rtol, match}), which
    freeze takes as defaults under the caller's per_output; checked there."""
    tolerances = getattr(obj, "tolerances", None)
    if tolerances is None:
        return {}
    if (not isinstance(tolerances, dict)
            or not all(isinstance(v, dict) and all(isinstance(x, int | float) for x in v.values()) for v in tolerances.values())):
        raise WorkloadContractError("the workload's `tolerances` must be a dict of output name -> {atol, rtol, match} (numbers)")
    return {str(k): {str(key): float(x) for key, x in v.items()} for k, v in tolerances.items()}


# a lever's value -> torch._inductor.config
INDUCTOR_SETTINGS = {"coordinate_descent": "coordinate_descent_tuning", "combo_kernels": "combo_kernels"}


def setting(torch: Any, name: str) -> None:
    """Turn a setting lever on, process-wide, recording what it replaced (restore_settings puts it back, so a kept
    worker can serve the next candidate without it)."""
    if torch is None:
        raise WorkloadContractError(f"the {name} lever needs torch in the worker's Python")
    if name == "tf32":
        _set(torch.backends.cuda.matmul, "allow_tf32", True)
        _set(torch.backends.cudnn, "allow_tf32", True)
    elif name == "cudnn_benchmark":
        _set(torch.backends.cudnn, "benchmark", True)
    elif name in INDUCTOR_SETTINGS:  # before any compile: every graph the worker compiles has it
        import torch._inductor.config as inductor_config

        _set(inductor_config, INDUCTOR_SETTINGS[name], True)


def _set(owner: Any, attribute: str, value: Any) -> None:
    STATE.settings_before.append((owner, attribute, getattr(owner, attribute)))
    setattr(owner, attribute, value)


def restore_settings() -> None:
    """Put back what the setting levers replaced, last first (the last candidate's compiled code is gone by then:
    runner.release resets dynamo; Inductor's caches key their entries by its config)."""
    while STATE.settings_before:
        owner, attribute, value = STATE.settings_before.pop()
        setattr(owner, attribute, value)


def compile_model(torch: Any, mode: str) -> None:
    if torch is None:
        raise WorkloadContractError("torch.compile needs torch in the worker's Python")
    model = getattr(STATE.obj, "model", None)
    options = {} if mode == "default" else {"mode": mode}
    if isinstance(model, torch.nn.Module):
        model.forward = torch.compile(model.forward, **options)
    else:
        STATE.step = torch.compile(STATE.step, **options)
