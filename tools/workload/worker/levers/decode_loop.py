"""The decode_loop lever, worker side: transformers' greedy `generate` on a static KV cache run as one loop of our
own: a prefill, then one step per token (the forward with its causal mask, the argmax, the cache write) compiled
once and replayed from CUDA/HIP graphs, with no host sync between tokens.

transformers' own static-cache generate compiles the model's forward only: around each token it builds the mask,
runs its logits processors and stopping criteria in Python and syncs the host to check them, so the GPU waits for the
host most of such a step (docs/decisions.md: decode_loop). The loop does the same arithmetic as that path
(the same cache, mask, positions and argmax; EOS banned before min_new_tokens; after a row's EOS the pad, fed back as
generate feeds it, on the device; the output cut where the last row stopped, once at the end instead of a sync each
token; each token's raw logits in float32 when the call asks for them with return_dict_in_generate and output_logits)
and replaces `model.generate` on the workload's model. It takes only a call it covers exactly (a left-padded batch too,
on a model whose forward takes position_ids); any other (sampling, beams, a logits processor, a dynamic cache) runs
transformers' own generate, counted with its reason: a lever that fell back did not take effect.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from dataclasses import dataclass
from typing import Any

COVERED_ARGUMENTS = frozenset({"input_ids", "attention_mask", "max_new_tokens", "min_new_tokens", "do_sample", "num_beams",
                               "pad_token_id", "eos_token_id", "cache_implementation", "use_cache", "return_dict_in_generate",
                               "output_logits"})
# generation_config fields the loop applies (EOS, lengths) or that shape no greedy token: what may differ from the defaults
INERT_CONFIG = frozenset({"pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "cache_implementation",
                          "max_new_tokens", "min_new_tokens", "max_length", "min_length", "do_sample", "num_beams", "use_cache",
                          "transformers_version", "_from_model_config", "compile_config", "return_dict_in_generate",
                          "output_scores", "output_logits", "output_attentions", "output_hidden_states",
                          "temperature", "top_k", "top_p", "min_p", "typical_p"})  # the last five: sampling's, unread by greedy


class Counts:
    """The loop's calls and each fallback's reason, read by the worker's engagement entry; its replayed decode steps
    and the KV cache bytes they read at least (a profile's replay roof adds them to the weights)."""

    def __init__(self) -> None:
        self.loop = 0
        self.fallbacks: Counter[str] = Counter()
        self.steps = 0
        self.kv_read_bytes = 0

    def snapshot(self) -> dict[str, Any]:
        return {"loop": self.loop, "fallbacks": dict(self.fallbacks), "steps": self.steps, "kv_read_bytes": self.kv_read_bytes}

    def since(self, before: dict[str, Any]) -> dict[str, Any]:
        """The calls, fallbacks, steps and KV bytes counted after `before` (a snapshot): what one profiled step did."""
        earlier = before["fallbacks"]
        return {"loop": self.loop - before["loop"],
                "fallbacks": {why: n - earlier.get(why, 0) for why, n in self.fallbacks.items() if n > earlier.get(why, 0)},
                "steps": self.steps - before.get("steps", 0), "kv_read_bytes": self.kv_read_bytes - before.get("kv_read_bytes", 0)}

    def kv_bytes_per_step(self, before: dict[str, Any]) -> int | None:
        """The mean KV cache bytes a replayed decode step read at least since `before`, or None when none ran."""
        counted = self.since(before)
        return counted["kv_read_bytes"] // counted["steps"] if counted["steps"] else None


COUNTS = Counts()


class GreedyDecode:
    """What `model.generate` becomes: the loop for a call it covers, the original generate otherwise."""

    def __init__(self, model: Any, compiled: bool) -> None:
        import torch

        self.torch, self.model, self.original, self.compiled = torch, model, model.generate, compiled
        self.caches: dict[tuple[int, int], Any] = {}
        parameters = inspect.signature(model.forward).parameters
        # prefill: the last position's logits, as generate asks
        self.keep_last = {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}
        self.cache_word = "cache" if "cache" in parameters else "past_key_values"  # transformers 5.2x renamed the argument
        self.takes_positions = "position_ids" in parameters  # given as generate gives them (OPT counts them from a mask otherwise)
        self.positions: Any = None
        self.step = torch.compile(_decode_step, mode="reduce-overhead", dynamic=False) if compiled else _decode_step

    def __call__(self, inputs: Any = None, **kwargs: Any) -> Any:
        input_ids = kwargs.pop("input_ids", inputs)
        reason = uncovered(self.model, input_ids, kwargs)
        if reason is not None:
            COUNTS.fallbacks[reason] += 1
            return self.original(input_ids, **kwargs)
        COUNTS.loop += 1
        return self.decode(input_ids, plan_of(self.model, input_ids, kwargs), padding_mask(kwargs.get("attention_mask")))

    def decode(self, input_ids: Any, plan: Plan, padding: Any = None) -> Any:
        """Prefill the prompt, then `plan.new_tokens - 1` replayed steps, then EOS applied as generate applies it; the
        prompt and the tokens, as generate returns them. `padding`: a left-padded batch's attention mask (zeros on its
        pads), given to every forward over the whole cache with each row's positions counted from its first real token,
        as generate counts them."""
        torch = self.torch
        batch, prompt = input_ids.shape
        total = prompt + plan.new_tokens
        cache = self._cache(batch, total)
        device = input_ids.device
        if self.positions is None or self.positions.numel() < total or self.positions.device != device:
            self.positions = torch.arange(total, device=device)
        padded = padded_inputs(torch, padding, total) if padding is not None else None
        tokens = torch.empty(batch, total, dtype=input_ids.dtype, device=device)
        tokens[:, :prompt] = input_ids
        kept: list[Any] = []  # each token's raw logits, float32, when the call asks for them
        with torch.no_grad():
            logits = self.model(input_ids=input_ids, cache_position=self.positions[:prompt], use_cache=True, **{self.cache_word: cache},
                                **self._extra(self.positions, padded, 0, prompt, batch), **self.keep_last).logits[:, -1, :]
            banned = _banned(torch, plan, logits.shape[-1], device)  # EOS while fewer than min_new_tokens are out, or None
            token = _greedy(logits, None if banned is None else banned[0])
            stops = torch.tensor(plan.eos, device=device) if plan.eos else None
            done = torch.isin(token, stops) if stops is not None else None  # rows past their EOS: generate feeds them the pad
            tokens[:, prompt] = token[:, 0]
            if plan.logits:
                kept.append(logits.to(torch.float32, copy=True))
            COUNTS.steps += total - 1 - prompt
            COUNTS.kv_read_bytes += kv_read_bytes(cache, prompt, total)
            for at in range(prompt, total - 1):
                if self.compiled:
                    torch.compiler.cudagraph_mark_step_begin()
                token, logits = self.step(self.model, token, self.positions[at:at + 1],
                                          {self.cache_word: cache, **self._extra(self.positions, padded, at, at + 1, batch)},
                                          None if banned is None else banned[at + 1 - prompt])
                token = token.clone()  # the graph's outputs are overwritten by its next replay
                if done is not None:
                    token = torch.where(done, plan.pad, token)
                    done = done | torch.isin(token, stops)
                tokens[:, at + 1] = token[:, 0]
                if plan.logits:
                    kept.append(logits.to(torch.float32, copy=True))  # a copy: the graph's next replay overwrites its outputs
        if plan.eos:
            tokens = _stopped_at_eos(torch, tokens, prompt, plan)
        return _returned(tokens, kept[:tokens.shape[1] - prompt], cache, plan)

    def _extra(self, positions: Any, padded: tuple[Any, Any] | None, start: int, end: int, batch: int) -> dict[str, Any]:
        """The forward's position ids for slots start:end (where it takes them) and, for a padded batch, its mask over the whole cache."""
        if padded is None:
            return _position_ids(positions[start:end], batch, self.takes_positions)
        mask, rows = padded
        return {"attention_mask": mask, "position_ids": rows[:, start:end]}

    def _cache(self, batch: int, total: int) -> Any:
        from transformers import StaticCache

        cache = self.caches.get((batch, total))
        if cache is None:
            cache = self.caches[(batch, total)] = StaticCache(config=self.model.config, max_cache_len=total)
        else:
            cache.reset()
        return cache


@dataclass(frozen=True)
class Plan:
    """What one covered generate call asks: how many new tokens, and generate's EOS rules (none: `eos` empty)."""

    new_tokens: int
    eos: tuple[int, ...] = ()
    min_new_tokens: int = 0  # EOS is banned until this many new tokens are out (min_new_tokens, min_length)
    pad: int = 0  # what follows a row's EOS
    as_dict: bool = False  # return_dict_in_generate: a GenerateDecoderOnlyOutput, not the tokens alone
    logits: bool = False  # output_logits (with as_dict): each token's raw logits, float32, as generate keeps them


def kv_read_bytes(cache: Any, prompt: int, total: int) -> int:
    """The KV cache bytes the replayed steps of one decode read at least: the step at position `at` attends to the
    `at + 1` slots filled so far (a sliding-window layer's window at most), keys and values each read once. Read off
    the static cache's layers after the prefill filled them; 0 for a cache whose layers are not laid out so."""
    per_layer = []  # (slots, bytes a slot of keys and values)
    for layer in getattr(cache, "layers", None) or ():
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if keys is None or values is None or getattr(keys, "dim", lambda: 0)() < 2 or not keys.shape[-2]:
            continue
        slots = int(keys.shape[-2])
        per_layer.append((slots, (keys.nbytes + values.nbytes) // slots))
    return sum(min(at + 1, slots) * per_slot for at in range(prompt, total - 1) for slots, per_slot in per_layer)


def plan_of(model: Any, input_ids: Any, kwargs: dict[str, Any]) -> Plan:
    eos = _setting(model, kwargs, "eos_token_id")
    eos_ids = tuple(int(e) for e in (eos if isinstance(eos, list | tuple) else [] if eos is None else [eos]))
    minimum = max(int(_setting(model, kwargs, "min_new_tokens") or 0), int(_setting(model, kwargs, "min_length") or 0) - input_ids.shape[1])
    pad = _setting(model, kwargs, "pad_token_id")
    as_dict = bool(_setting(model, kwargs, "return_dict_in_generate"))
    return Plan(int(_setting(model, kwargs, "max_new_tokens")), eos_ids, minimum,
                int(pad) if pad is not None else (eos_ids[0] if eos_ids else 0), as_dict,
                as_dict and bool(_setting(model, kwargs, "output_logits")))


def _decode_step(model: Any, token: Any, position: Any, extra: dict[str, Any], banned: Any) -> tuple[Any, Any]:
    """One token: the forward at `position` over the cache, argmax; the token and the raw logits it was chosen from.
    `extra`: the cache, `position_ids` where the forward takes them, and a 2-D mask only for a padded batch: generate
    passes none to a static cache's forward of an unpadded batch, the model masking the slots past `position` from
    `cache_position` (a mask over the whole cache broke OPT's positions, Bloom's ALiBi and Mamba's state)."""
    logits = model(input_ids=token, cache_position=position, use_cache=True, **extra).logits[:, -1, :]
    return _greedy(logits, banned), logits


def padding_mask(mask: Any) -> Any:
    """A batch's attention mask where it pads a row (None: no mask, or no zeros in it; uncovered asks that it pads on the left)."""
    return None if mask is None or bool(mask.all()) else mask


def padded_inputs(torch: Any, mask: Any, total: int) -> tuple[Any, Any]:
    """A padded batch's mask over the whole cache (the prompt's, then ones) and each row's position ids, counted from
    its first real token (pads at 1), as generate counts them."""
    whole = torch.ones(mask.shape[0], total, dtype=mask.dtype, device=mask.device)
    whole[:, :mask.shape[1]] = mask
    return whole, (whole.long().cumsum(-1) - 1).masked_fill(whole == 0, 1)


def _position_ids(positions: Any, batch: int, taken: bool) -> dict[str, Any]:
    """`positions` as the forward's position_ids, one row a batch row, where the forward takes them (`taken`)."""
    return {"position_ids": positions.unsqueeze(0).expand(batch, -1)} if taken else {}


def _greedy(logits: Any, banned: Any) -> Any:
    """The argmax, EOS's logits at -inf where generate's min-length processors ban it (`banned`: a bool per vocabulary id)."""
    if banned is not None:
        logits = logits.masked_fill(banned, float("-inf"))
    return _argmax(logits)


ARGMAX_CHUNK = 1024  # the vocabulary's slice the first pass of the argmax reduces per program; 0: one pass


def _argmax(logits: Any) -> Any:
    """The first index of each row's largest logit, as argmax(-1, keepdim=True) gives it, in two passes: the largest of
    each chunk of ARGMAX_CHUNK ids with its first index, then the first chunk holding the largest. Inductor lowers a
    one-pass argmax over a 128k vocabulary to one program a row (docs/decisions.md: decode_loop); the chunks spread the
    first pass over the device. Exact: the first maximum of the first chunk that holds the row's maximum is the row's
    first maximum (the padding, -inf after the last id, comes after every id)."""
    import torch

    vocabulary = logits.shape[-1]
    if not ARGMAX_CHUNK or vocabulary <= 2 * ARGMAX_CHUNK:
        return logits.argmax(-1, keepdim=True)
    padded = torch.nn.functional.pad(logits, (0, -vocabulary % ARGMAX_CHUNK), value=float("-inf"))
    largest, where = padded.view(*logits.shape[:-1], -1, ARGMAX_CHUNK).max(-1)
    chunk = largest.argmax(-1, keepdim=True)
    return chunk * ARGMAX_CHUNK + where.gather(-1, chunk)


def _banned(torch: Any, plan: Plan, vocabulary: int, device: Any) -> Any:
    """Per new token, the vocabulary ids generate bans (EOS before min_new_tokens); None when it bans none."""
    steps = min(plan.min_new_tokens, plan.new_tokens)
    eos = [e for e in plan.eos if 0 <= e < vocabulary]  # an id past the vocabulary (GPT-2's 50,256 on a smaller one) is never chosen
    if not eos or steps <= 0:
        return None
    banned = torch.zeros(plan.new_tokens, vocabulary, dtype=torch.bool, device=device)
    banned[:steps, eos] = True
    return banned


def _stopped_at_eos(torch: Any, tokens: Any, prompt: int, plan: Plan) -> Any:
    """Generate's EOS rule on tokens decoded to the end: after a row's first EOS its tokens are the pad, and the output
    ends where the last row stopped (one host sync per call: the length). Rows do not see each other, so decoding a
    stopped row on changes no other row."""
    new = tokens[:, prompt:]
    stop = torch.isin(new, torch.tensor(plan.eos, device=tokens.device))
    first = torch.where(stop.any(dim=1), stop.to(torch.int8).argmax(dim=1), plan.new_tokens)
    index = torch.arange(plan.new_tokens, device=tokens.device)
    new = torch.where(index.unsqueeze(0) > first.unsqueeze(1), plan.pad, new)
    end = min(plan.new_tokens, int(first.max()) + 1)
    return torch.cat([tokens[:, :prompt], new[:, :end]], dim=1)


def _returned(tokens: Any, logits: list[Any], cache: Any, plan: Plan) -> Any:
    """What generate returns for the call: the tokens, or with return_dict_in_generate its output record."""
    if not plan.as_dict:
        return tokens
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    return GenerateDecoderOnlyOutput(sequences=tokens, logits=tuple(logits) if plan.logits else None, past_key_values=cache)


def install(model: Any, compiled: bool) -> None:
    """Put the loop in place of `model.generate` (the instance's attribute: the class and other models keep theirs)."""
    from hyperloom.core.factory import WorkloadContractError
    from hyperloom.tools.workload.worker.levers.model_changes import without_generate

    missing = without_generate(model, "decode_loop")
    if missing is not None:
        raise WorkloadContractError(missing)
    if not isinstance(model.generate, GreedyDecode):
        model.generate = GreedyDecode(model, compiled)


def uncovered(model: Any, input_ids: Any, kwargs: dict[str, Any]) -> str | None:
    """Why the loop would not give this generate call's exact tokens (None: it would)."""
    import torch

    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        return "no 2-D input_ids tensor (inputs_embeds or another input)"
    if getattr(model.config, "is_encoder_decoder", False):
        return "an encoder-decoder model (the loop decodes a decoder-only model's tokens)"
    extra = sorted(set(kwargs) - COVERED_ARGUMENTS)
    if extra:
        return f"generate argument {extra[0]} is not covered"
    if _setting(model, kwargs, "cache_implementation") != "static":
        return ("the call decodes on a dynamic KV cache: stack it on a static one (cache_implementation='static', e.g. the workload's "
                "cache knob)")
    shaped = not_greedy(model, kwargs)
    if shaped:
        return shaped
    if _setting(model, kwargs, "use_cache") is False:
        return "use_cache=False"
    new_tokens = _setting(model, kwargs, "max_new_tokens")
    if not isinstance(new_tokens, int) or new_tokens < 1:
        return "no max_new_tokens"
    if _setting(model, kwargs, "return_dict_in_generate"):
        asked = next((o for o in ("output_scores", "output_attentions", "output_hidden_states") if _setting(model, kwargs, o)), None)
        if asked:
            return f"{asked} (the loop returns the tokens and their logits only)"
    mask = kwargs.get("attention_mask")
    if mask is not None and tuple(mask.shape) != tuple(input_ids.shape):
        return "an attention_mask not of the prompt's shape"
    if padding_mask(mask) is not None:
        if not bool((mask[:, 1:] >= mask[:, :-1]).all()):
            return "a batch padded on the right or inside a prompt (the loop takes left padding, as generate wants it)"
        if "position_ids" not in inspect.signature(model.forward).parameters:
            return f"a padded batch on {type(model).__name__} (the loop gives padded rows their positions through position_ids)"
    return None


BANS = frozenset({"suppress_tokens", "begin_suppress_tokens", "bad_words_ids", "forced_bos_token_id", "forced_decoder_ids"})
"""generation_config fields whose processors only ban tokens or force the first ones: each token is still the argmax of
those left, as the near-tie gate reads it (Whisper's config bans some from the first step), though the loop, which
does not apply them, does not cover them."""


def not_greedy(model: Any, kwargs: dict[str, Any], bans_too: bool = True) -> str | None:
    """Why a generate call with `kwargs` does not pick each token as the argmax of the model's raw logits (None: it
    does): sampling, beams, or a logits processor or stopping rule set in the call or the model's generation_config;
    with `bans_too` False, one that only bans or forces tokens (BANS) is not a reason."""
    if _setting(model, kwargs, "do_sample"):
        return "sampling (do_sample)"
    if (_setting(model, kwargs, "num_beams") or 1) != 1:
        return f"beam search (num_beams={_setting(model, kwargs, 'num_beams')})"
    default, inert = _default_config(), INERT_CONFIG if bans_too else INERT_CONFIG | BANS
    asked = next((key for key in sorted(kwargs) if key in default and key not in inert and kwargs[key] != default[key]), None)
    if asked:
        return f"generate argument {asked} shapes the tokens (a logits processor or stopping rule)"
    shaping = _shaping_config(model, inert)
    return f"generation_config.{shaping} shapes the tokens (a logits processor or stopping rule)" if shaping else None


def _setting(model: Any, kwargs: dict[str, Any], name: str) -> Any:
    return kwargs[name] if name in kwargs else getattr(model.generation_config, name, None)


def _shaping_config(model: Any, inert: frozenset[str] = INERT_CONFIG) -> str | None:
    ours, default = model.generation_config.to_dict(), _default_config()
    return next((key for key, value in sorted(ours.items()) if key not in inert and default.get(key, value) != value), None)


@functools.cache
def _default_config() -> dict[str, Any]:
    """transformers' GenerationConfig defaults, read once (a call builds and serializes one: about 60 us)."""
    from transformers import GenerationConfig

    return GenerationConfig().to_dict()
