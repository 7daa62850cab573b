"""Levers that change the built model itself, worker side: a static KV cache for its generate (static_cache) and
channels_last memory format (channels_last). Each counts what it can show took effect, for runner.engagement."""

from __future__ import annotations

import functools
from typing import Any

from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.workload.worker.levers import fused_projections


class CacheCounts:
    """generate calls since the lever was put in place: all, and those that overrode cache_implementation."""

    def __init__(self) -> None:
        self.calls = 0
        self.overridden = 0

    def snapshot(self) -> dict[str, int]:
        return {"calls": self.calls, "overridden": self.overridden}


CACHE = CacheCounts()


def without_generate(model: Any, lever: str) -> str | None:
    """Why `lever` cannot act on the workload's `model` (a transformers model with generate() and a generation_config is
    what it needs), naming what the model is; None when it can."""
    if model is None:
        return (f"the {lever} lever needs the workload's `model` attribute (a transformers model with generate()); this workload has no "
                "`model`: leave the lever out")
    if (not callable(getattr(model, "generate", None)) or getattr(model, "generation_config", None) is None
            or getattr(model, "config", None) is None):
        return (f"the {lever} lever acts on a model's generate(); the workload's model is a {type(model).__name__}, which has no "
                "generate() and generation_config (an encoder, or a base model without its language-model head): leave the lever out")
    return None


def static_cache(model: Any) -> None:
    """Set the model's generation_config to a static KV cache and count its generate calls (those that pass another
    cache_implementation keep theirs: counted as overridden)."""
    missing = without_generate(model, "static_cache")
    if missing is not None:
        raise WorkloadContractError(missing)
    config = model.generation_config
    config.cache_implementation = "static"
    original = model.generate

    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        CACHE.calls += 1
        if kwargs.get("cache_implementation", "static") != "static":
            CACHE.overridden += 1
        return original(*args, **kwargs)

    model.generate = counted


def channels_last(torch: Any, obj: Any) -> int:
    """The model's 4-D parameters and the workload object's 4-D float tensors (its inputs) in channels_last; returns how
    many of the model's parameters are 4-D (0: nothing for the format to change)."""
    model = getattr(obj, "model", None)
    if torch is None or not isinstance(model, torch.nn.Module):
        raise WorkloadContractError("the channels_last lever needs the workload's `model` attribute to be a torch.nn.Module; this workload "
                                    "has none")
    model.to(memory_format=torch.channels_last)
    for key, value in list(vars(obj).items()):
        if isinstance(value, torch.Tensor) and value.dim() == 4 and value.is_floating_point():
            setattr(obj, key, value.contiguous(memory_format=torch.channels_last))
    return sum(1 for p in model.parameters() if p.dim() == 4 and p.is_contiguous(memory_format=torch.channels_last))


def facts(torch: Any, obj: Any) -> dict[str, Any]:
    """What the built workload's `model` has that a lever acts on, read without running it (optimize's preconditions,
    tools/optimize/applies.py): a torch module at all, a transformers generate with a generation_config (and its
    cache_implementation; whether the model is an encoder-decoder, whose tokens decode_loop does not decode), 4-D
    weights (convolutions), float32 weights of two or more dimensions (TF32's matmuls) and the sibling projections
    fuse_projections would fuse.
    Empty when the workload has no `model` that is a torch module (then every lever is tried)."""
    model = getattr(obj, "model", None)
    if torch is None or not isinstance(model, torch.nn.Module):
        return {}
    params = list(model.parameters())
    config = getattr(model, "generation_config", None)
    return {"module": True, "generate": callable(getattr(model, "generate", None)) and config is not None,
            "cache_implementation": str(getattr(config, "cache_implementation", None) or ""),
            "encoder_decoder": bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False)),
            "conv_weights": sum(1 for p in params if p.dim() == 4),
            "float32_weights": sum(1 for p in params if p.dim() >= 2 and p.dtype == torch.float32),
            "projection_groups": fused_projections.fusable(torch, model)}
