"""The decode_loop lever, worker side: transformers' greedy `generate` on a static KV cache run as one loop of our
own: a prefill, then one step per token (the forward with its causal mask, the argmax, the cache write) compiled
once and replayed from CUDA/HIP graphs, with no host sync between tokens.

transformers' own static-cache generate compiles the model's forward only: around each token it builds the mask,
runs its logits processors and stopping criteria in Python and syncs the host to check them; on the H200 the GPU
was busy about a fifth of such a step (results/h200/static_decode). The loop does the same arithmetic as that path
(the same cache, mask, positions and argmax) and replaces `model.generate` on the workload's model. It takes only a
call it covers exactly; any other (sampling, beams, padding, a logits processor, a dynamic cache, a possible stop at
EOS) runs transformers' own generate, counted with its reason: a lever that fell back did not take effect.
"""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

COVERED_ARGUMENTS = frozenset({"input_ids", "attention_mask", "max_new_tokens", "min_new_tokens", "do_sample", "num_beams",
                               "pad_token_id", "eos_token_id", "cache_implementation", "use_cache"})
# generation_config fields that shape no token of a greedy decode without EOS: what may differ from the defaults
INERT_CONFIG = frozenset({"pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "cache_implementation",
                          "max_new_tokens", "min_new_tokens", "max_length", "min_length", "do_sample", "num_beams", "use_cache",
                          "transformers_version", "_from_model_config", "compile_config", "return_dict_in_generate",
                          "output_scores", "output_logits", "output_attentions", "output_hidden_states",
                          "temperature", "top_k", "top_p", "min_p", "typical_p"})  # the last five: sampling's, unread by greedy


class Counts:
    """The loop's calls and each fallback's reason, read by the worker's engagement entry."""

    def __init__(self) -> None:
        self.loop = 0
        self.fallbacks: Counter[str] = Counter()

    def snapshot(self) -> dict[str, Any]:
        return {"loop": self.loop, "fallbacks": dict(self.fallbacks)}


COUNTS = Counts()


class GreedyDecode:
    """What `model.generate` becomes: the loop for a call it covers, the original generate otherwise."""

    def __init__(self, model: Any, compiled: bool) -> None:
        import torch

        self.torch, self.model, self.original, self.compiled = torch, model, model.generate, compiled
        self.caches: dict[tuple[int, int], Any] = {}
        parameters = inspect.signature(model.forward).parameters
        self.keep_last = {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}  # prefill: the last position's logits, as generate asks
        self.cache_word = "cache" if "cache" in parameters else "past_key_values"  # transformers 5.2x renamed the argument
        self.positions: Any = None
        self.step = torch.compile(_decode_step, mode="reduce-overhead", dynamic=False) if compiled else _decode_step

    def __call__(self, inputs: Any = None, **kwargs: Any) -> Any:
        input_ids = kwargs.pop("input_ids", inputs)
        reason = uncovered(self.model, input_ids, kwargs)
        if reason is not None:
            COUNTS.fallbacks[reason] += 1
            return self.original(input_ids, **kwargs)
        COUNTS.loop += 1
        return self.decode(input_ids, int(_setting(self.model, kwargs, "max_new_tokens")))

    def decode(self, input_ids: Any, new_tokens: int) -> Any:
        """Prefill the prompt, then `new_tokens - 1` replayed steps; the prompt and the tokens, as generate returns them."""
        torch = self.torch
        batch, prompt = input_ids.shape
        total = prompt + new_tokens
        cache = self._cache(batch, total)
        if self.positions is None or self.positions.numel() < total or self.positions.device != input_ids.device:
            self.positions = torch.arange(total, device=input_ids.device)
        tokens = torch.empty(batch, total, dtype=input_ids.dtype, device=input_ids.device)
        tokens[:, :prompt] = input_ids
        with torch.no_grad():
            logits = self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), cache_position=self.positions[:prompt],
                                use_cache=True, **{self.cache_word: cache}, **self.keep_last).logits
            token = logits[:, -1, :].argmax(-1, keepdim=True)
            tokens[:, prompt] = token[:, 0]
            for at in range(prompt, total - 1):
                if self.compiled:
                    torch.compiler.cudagraph_mark_step_begin()
                token = self.step(self.model, token, self.positions[at:at + 1], self.positions[:total], {self.cache_word: cache}).clone()
                tokens[:, at + 1] = token[:, 0]
        return tokens

    def _cache(self, batch: int, total: int) -> Any:
        from transformers import StaticCache

        cache = self.caches.get((batch, total))
        if cache is None:
            cache = self.caches[(batch, total)] = StaticCache(config=self.model.config, max_cache_len=total)
        else:
            cache.reset()
        return cache


def _decode_step(model: Any, token: Any, position: Any, slots: Any, cache: dict[str, Any]) -> Any:
    """One token: the forward at `position` over the cache (slots past it masked, as generate's padded mask does), argmax."""
    seen = (slots <= position).to(token.dtype).unsqueeze(0).expand(token.shape[0], -1)
    logits = model(input_ids=token, attention_mask=seen, cache_position=position, use_cache=True, **cache).logits
    return logits[:, -1, :].argmax(-1, keepdim=True)


def install(model: Any, compiled: bool) -> None:
    """Put the loop in place of `model.generate` (the instance's attribute: the class and other models keep theirs)."""
    from hyperloom.core.factory import WorkloadContractError

    if model is None or not callable(getattr(model, "generate", None)) or getattr(model, "config", None) is None:
        raise WorkloadContractError("the decode_loop lever needs the workload's `model` attribute to be a transformers model with "
                                    "generate(); this workload has none: leave the lever out")
    if not isinstance(model.generate, GreedyDecode):
        model.generate = GreedyDecode(model, compiled)


def uncovered(model: Any, input_ids: Any, kwargs: dict[str, Any]) -> str | None:
    """Why the loop would not give this generate call's exact tokens (None: it would)."""
    torch = __import__("torch")
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        return "no 2-D input_ids tensor (inputs_embeds or another input)"
    extra = sorted(set(kwargs) - COVERED_ARGUMENTS)
    if extra:
        return f"generate argument {extra[0]} is not covered"
    if _setting(model, kwargs, "cache_implementation") != "static":
        return "the call decodes on a dynamic KV cache: stack it on a static one (cache_implementation='static', e.g. the workload's cache knob)"
    if _setting(model, kwargs, "do_sample") or (_setting(model, kwargs, "num_beams") or 1) != 1:
        return "sampling or beam search (the loop is greedy)"
    if _setting(model, kwargs, "use_cache") is False:
        return "use_cache=False"
    new_tokens = _setting(model, kwargs, "max_new_tokens")
    if not isinstance(new_tokens, int) or new_tokens < 1:
        return "no max_new_tokens"
    if _setting(model, kwargs, "eos_token_id") is not None and (_setting(model, kwargs, "min_new_tokens") or 0) < new_tokens:
        return "generation could stop at EOS (min_new_tokens below max_new_tokens)"
    shaping = _shaping_config(model)
    if shaping:
        return f"generation_config.{shaping} shapes the tokens (a logits processor or stopping rule)"
    mask = kwargs.get("attention_mask")
    if mask is not None and (tuple(mask.shape) != tuple(input_ids.shape) or not bool(mask.all())):
        return "a padded batch (an attention_mask with zeros)"
    return None


def _setting(model: Any, kwargs: dict[str, Any], name: str) -> Any:
    return kwargs[name] if name in kwargs else getattr(model.generation_config, name, None)


def _shaping_config(model: Any) -> str | None:
    from transformers import GenerationConfig

    ours, default = model.generation_config.to_dict(), GenerationConfig().to_dict()
    return next((key for key, value in sorted(ours.items()) if key not in INERT_CONFIG and default.get(key, value) != value), None)
