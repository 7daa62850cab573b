"""The decode_attention lever, worker side: a transformers model's attention at one query position (a decode step)
computed by the library's Triton kernel (kernels/triton/decode_attention) instead of scaled_dot_product_attention.

At decode, transformers' SDPA path with a mask (a static cache always has one) repeats each KV head's cache for its
query heads (a copy of every layer's K and V a token; docs/decisions.md: decode_attention), then attends over every slot
of the cache, filled or not. The kernel reads each KV head once for its query heads and skips the blocks of slots the
mask leaves out, so a static cache is read only where it is filled; it is a torch custom op, so a compiled step keeps
it as one node and a CUDA/HIP graph replays its launch.

The route is per model: the lever marks the model's modules, and transformers' "sdpa" attention function (wrapped
once per process) sends a marked module's call to the kernel when the kernel covers it: one query position, no
dropout, no position bias, softcap or attention sinks, a mask of one row per batch row; any other call (a prefill, an
unmarked model's) runs transformers' own SDPA. A copy of a marked model is marked too (a kept worker's candidate).
"""

from __future__ import annotations

import functools
from typing import Any

from hyperloom.tools.workload.worker.levers.kernel_route import Counts, counted_op, launcher, unbuilt

MARK = "_hyperloom_decode_attention"  # set on every module of a routed model
OP_NAME = "hyperloom::decode_attention"
UNCOVERED_KWARGS = ("softcap", "s_aux", "sinks")  # arguments some models pass that the kernel does not compute
EXPECTED = ("prefill",)  # many query positions: transformers' SDPA, by design
KERNELS = ("decode_attention_kernel", "combine_kernel")
COUNTS = Counts()
_STATE: dict[str, Any] = {}  # the loaded launcher, the op, the original SDPA function


def route(torch: Any, model: Any) -> dict[str, Any]:
    """Mark `model` for the kernel and wrap transformers' SDPA attention once: what was routed, for engagement."""
    if model is None or not hasattr(model, "modules"):
        return {"routed": 0, "what": "attention module(s) routed", "why": "the workload has no `model` attribute with modules"}
    config = getattr(model, "config", None)
    implementation = str(getattr(config, "_attn_implementation", "") or "")
    attention = [m for m in model.modules() if type(m).__name__.endswith("Attention")]
    if implementation != "sdpa":
        return {"routed": 0, "what": "attention module(s) routed", "why": "the model's attention implementation is "
                f"{implementation or 'unset'!r} ({len(attention)} attention module(s)); the kernel takes transformers' 'sdpa' calls"}
    _install(torch)
    broken = unbuilt(torch, *_probes(torch, model)) if attention else ""
    if broken:
        return {"routed": 0, "what": "attention module(s) routed", "why": broken}
    for module in model.modules():
        setattr(module, MARK, True)
    return {"routed": len(attention), "what": "attention module(s) routed", "why": "" if attention else "the model has no attention module"}


def _probes(torch: Any, model: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """(the model's device, launches at its heads and head size over a short cache: each mask kind, whole and split
    with its combine kernel), on zeros; none where the config does not give the heads."""
    config, weight = model.config, next(model.parameters(), None)
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    dim = getattr(config, "head_dim", None) or (config.hidden_size // heads if heads and getattr(config, "hidden_size", None) else None)
    if weight is None or not (heads and kv_heads and dim):
        return (weight.device if weight is not None else torch.device("cpu")), []
    run, slots = _STATE["launcher"].decode_attention, PROBE_SLOTS
    q = weight.new_zeros(1, heads, 1, dim)
    cache = weight.new_zeros(1, kv_heads, slots, dim)
    masks = (("a bool mask", torch.ones(1, 1, 1, slots, dtype=torch.bool, device=weight.device)),
             ("an additive mask", weight.new_zeros(1, 1, 1, slots)))
    return weight.device, [(f"{said}{split}", functools.partial(run, q, cache, cache, mask, dim ** -0.5, params))
                           for said, mask in masks for split, params in (("", None), (" split", {"SPLIT_SLOTS": slots // 2}))]


PROBE_SLOTS = 128  # the probe's cache: two blocks of the kernel's 64 slots, so the split and its combine kernel launch


def _install(torch: Any) -> None:
    """Load the kernel, define its op and wrap transformers' "sdpa" attention function, once a process."""
    if _STATE:
        return
    from transformers.modeling_utils import AttentionInterface

    kernel_module = launcher(torch, "decode_attention")
    op = counted_op(torch, OP_NAME, "(Tensor q, Tensor k, Tensor v, Tensor? mask, float scale) -> Tensor", COUNTS,
                    kernel_module.decode_attention, lambda q, k, v, mask, scale: q.new_empty(q.shape[0], 1, q.shape[1], q.shape[3]))
    original = AttentionInterface._global_mapping["sdpa"]
    _STATE.update(launcher=kernel_module, op=op, original=original)
    AttentionInterface.register("sdpa", _routed)


def _routed(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0, scaling: float | None = None,
            is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention function for "sdpa": the kernel for a marked module's call it covers, else the original."""
    original = _STATE["original"]
    if not getattr(module, MARK, False):
        return original(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs)
    why = uncovered(query, key, value, attention_mask, dropout, kwargs)
    if why:
        COUNTS.fell_back(why)
        return original(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs)
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    return _STATE["op"](query, key, value, attention_mask, scale), None


def uncovered(query: Any, key: Any, value: Any, mask: Any, dropout: float, kwargs: dict[str, Any]) -> str:
    """Why the kernel does not take this attention call (empty: it does); a prefill's many query positions included."""
    if query.dim() == 4 and query.shape[2] != 1:
        return "prefill"
    if dropout:
        return f"dropout {dropout}"
    for name in (*UNCOVERED_KWARGS, "position_bias"):
        if kwargs.get(name) is not None:
            return f"{name} given"
    if kwargs.get("output_attentions"):
        return "output_attentions asked"
    return _STATE["launcher"].unsupported(query, key, value, mask)
