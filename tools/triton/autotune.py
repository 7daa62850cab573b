"""The config a kernel's own @triton.autotune picks for a shape on a GPU, learned by running the autotuner as its
author would (a worker with torch); tune queues it as a candidate (tools/tune/seeds.py)."""

from __future__ import annotations

import importlib.util

from hyperloom.core.errors import HyperloomError
from hyperloom.core.worker import run_worker
from hyperloom.core.workspace import Workspace
from hyperloom.tools.runtime.visible import VISIBLE_DEVICES, pinned_environ
from hyperloom.tools.kernelspec.load import resolved_defines
from hyperloom.tools.pipeline.launch import Launchable, arg_specs
from hyperloom.tools.triton.constexprs import bind
from hyperloom.tools.triton.loader import describe_kernel, raise_for_error, worker_env
from hyperloom.tools.triton.models import AUTOTUNE_CONFIG, OPTIONS, AutotuneChoice

CHOICE_TIMEOUT_S = 900.0


def autotune_choice(launchable: Launchable, inputs_folder: object, workspace: Workspace, device: int | None) -> AutotuneChoice:
    """Which config the kernel's autotuner picks for this shape on this GPU, or why that cannot be learned here."""
    source, _ = launchable.loaded.source_of(launchable.variant)
    info = describe_kernel(source, launchable.variant.entry, workspace)
    if not info.autotune:
        return AutotuneChoice(determined=False, reason=f"{info.entry} has no @triton.autotune")
    if launchable.backend not in VISIBLE_DEVICES:
        return AutotuneChoice(determined=False, reason="the autotuner times configs on a GPU; this target has none")
    if importlib.util.find_spec("torch") is None:
        return AutotuneChoice(determined=False,
                              reason="running the kernel's own autotuner needs torch (Triton's launcher takes torch tensors)")
    tuned = {k for c in info.autotune for k in c.kwargs}
    defines = {k: v for k, v in resolved_defines(launchable.variant, launchable.shape).items() if k not in tuned and k not in OPTIONS
                           and k != AUTOTUNE_CONFIG}
    # the tuned ones: the autotuner's
    binding = bind(info, launchable.loaded.spec.args, {**defines, **{k: 0 for k in tuned}}, launchable.shape)
    payload = {
        "source": str(source), "entry": launchable.variant.entry, "shape": launchable.shape,
        "grid": [str(g) for g in launchable.loaded.spec.launch_of(launchable.variant).grid],
        "args": [a.model_dump() for a in arg_specs(launchable, inputs_folder, None)],  # type: ignore[arg-type]
        "constexprs": {k: v for k, v in binding.constexprs.items() if k not in tuned},
        "configs": [{"kwargs": c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages, "num_ctas": c.num_ctas, "maxnreg": c.maxnreg}
                    for c in info.autotune],
    }
    env = pinned_environ(worker_env(), launchable.backend, device)
    outcome = run_worker("hyperloom.tools.triton.autotune_worker:choice_payload", payload, timeout_s=CHOICE_TIMEOUT_S, env=env)
    if not outcome.ok:
        return AutotuneChoice(determined=False, reason=f"the kernel's own autotuner did not finish: {outcome.describe()}")
    try:
        result = raise_for_error(outcome.result, source, launchable.variant.entry)
    except HyperloomError as exc:
        return AutotuneChoice(determined=False, reason=exc.cause)
    if result["index"] is None:
        return AutotuneChoice(determined=False, reason=f"the autotuner picked {result['config']}, which is not one of its listed configs "
                                                       "(a prune or a pre-hook changed it)")
    return AutotuneChoice(determined=True, reason=f"Triton's autotuner on {result['device']} (its own do_bench)",
                          config_index=result["index"], config=info.autotune[result["index"]].label(),
                          params={AUTOTUNE_CONFIG: result["index"]}, triton_ms=result["triton_ms"])
