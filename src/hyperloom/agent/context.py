"""How many tokens the server's context holds, read where the server says it, and how many a request takes.

Context: llama.cpp's /props (default_generation_settings.n_ctx) and /slots (each slot's n_ctx); a /models entry
(vLLM's max_model_len, llama.cpp's meta.n_ctx, Lemonade's recipe_options.ctx_size, context_length elsewhere);
Lemonade's /health (the loaded model's recipe_options.ctx_size). Counting: llama.cpp renders the request with its
own chat template (/apply-template) and tokenizes it (/tokenize); elsewhere the count is estimated from the
request's characters at a rate the server's usage figures calibrate after each reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import httpx2

from hyperloom.agent.endpoint import ChatEndpoint, get_optional

ASSUMED_CONTEXT_TOKENS = 4096  # the default of llama.cpp's server for most GGUFs and of Lemonade
ASSUMED_TOKENS_PER_CHAR = 0.4  # above English prose and JSON with common BPE vocabularies (about 0.25 to 0.35)
CALIBRATION_MARGIN = 1.1  # the next request's text is not the last one's: keep a tenth in hand


@dataclass(frozen=True)
class ServerContext:
    tokens: int
    source: str  # where the number came from, for the user and the transcript
    tag: Literal["MEASURED", "GIVEN", "ASSUMED"]
    kind: str  # "llama.cpp", "vllm", "lemonade" or "unknown"


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_model_entry(entry: dict[str, Any]) -> tuple[int, str, str] | None:
    """(tokens, field, kind) from one /models entry, for the servers that put the context there."""
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    options = entry.get("recipe_options") if isinstance(entry.get("recipe_options"), dict) else {}
    for value, name, kind in ((entry.get("max_model_len"), "max_model_len", "vllm"), (meta.get("n_ctx"), "meta.n_ctx", "llama.cpp"),
                              (options.get("ctx_size"), "recipe_options.ctx_size", "lemonade"),
                              (entry.get("context_length"), "context_length", "unknown")):
        if (tokens := _positive(value)) is not None:
            return tokens, name, kind
    return None


def from_lemonade_health(health: Any, model: str) -> int | None:
    """The loaded model's ctx_size in Lemonade's /health (all_models_loaded), or the older top-level context_size."""
    if not isinstance(health, dict):
        return None
    for entry in health.get("all_models_loaded") or []:
        if isinstance(entry, dict) and entry.get("type") != "embedding" and entry.get("model_name") in (model, None):
            options = entry.get("recipe_options") if isinstance(entry.get("recipe_options"), dict) else {}
            if (tokens := _positive(options.get("ctx_size"))) is not None:
                return tokens
    return _positive(health.get("context_size"))


async def discover_context(client: httpx2.AsyncClient, endpoint: ChatEndpoint, model: str, entries: list[dict[str, Any]]) -> ServerContext:
    """The context one request may fill: the smallest a slot offers where the server says so, else 4096 ASSUMED."""
    props = await get_optional(client, f"{endpoint.root}/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        n_ctx = _positive(props["default_generation_settings"].get("n_ctx"))
        slots = await get_optional(client, f"{endpoint.root}/slots")
        per_slot = [t for s in slots if isinstance(s, dict) and (t := _positive(s.get("n_ctx")))] if isinstance(slots, list) else []
        if per_slot and (n_ctx is None or min(per_slot) < n_ctx):
            return ServerContext(min(per_slot), f"llama.cpp {endpoint.root}/slots n_ctx", "MEASURED", "llama.cpp")
        if n_ctx is not None:
            return ServerContext(n_ctx, f"llama.cpp {endpoint.root}/props default_generation_settings.n_ctx", "MEASURED", "llama.cpp")
    chosen = [e for e in entries if e.get("id") == model] or entries[:1]
    if chosen and (found := from_model_entry(chosen[0])) is not None:
        return ServerContext(found[0], f"{endpoint.url('/models')} {found[1]}", "MEASURED", found[2])
    if (tokens := from_lemonade_health(await get_optional(client, endpoint.url("/health")), model)) is not None:
        return ServerContext(tokens, f"Lemonade {endpoint.url('/health')} recipe_options.ctx_size", "MEASURED", "lemonade")
    return ServerContext(ASSUMED_CONTEXT_TOKENS, "the server does not say (no /props, max_model_len or ctx_size); pass --context",
                         "ASSUMED", "unknown")


def request_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools, ensure_ascii=False))


class TokenCounter:
    """Counts a request's prompt tokens the way the server will: llama.cpp's template and tokenizer where the
    server has them, else characters at a rate calibrated by the server's own usage figures."""

    def __init__(self, client: httpx2.AsyncClient, endpoint: ChatEndpoint, model: str) -> None:
        self.client, self.endpoint, self.model = client, endpoint, model
        self.tokens_per_char = ASSUMED_TOKENS_PER_CHAR
        self.calibrated = False
        self._server_counts: bool | None = None  # unknown until tried

    async def count(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[int, str]:
        """(tokens, how they were counted)."""
        if self._server_counts is not False:
            counted = await self._server_count(messages, tools)
            if counted is not None:
                self._server_counts = True
                return counted, "the server's /apply-template and /tokenize"
        how = "characters at the rate of the server's last usage figures" if self.calibrated else ("characters x "
                                                                                                   f"{ASSUMED_TOKENS_PER_CHAR} (ASSUMED)")
        return int(request_chars(messages, tools) * self.tokens_per_char) + 1, how

    async def _server_count(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int | None:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
        rendered = await get_optional(self.client, f"{self.endpoint.root}/apply-template", body)
        if not isinstance(rendered, dict) or not isinstance(rendered.get("prompt"), str):
            if self._server_counts is None:
                self._server_counts = False  # not llama.cpp: estimate from now on
            return None
        tokens = await get_optional(self.client, f"{self.endpoint.root}/tokenize",
                                    {"content": rendered["prompt"], "add_special": True, "parse_special": True})
        if not isinstance(tokens, dict) or not isinstance(tokens.get("tokens"), list):
            return None
        return len(tokens["tokens"])

    def calibrate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], prompt_tokens: int) -> None:
        """The server counted `prompt_tokens` for this request (usage, or its refusal): estimate at that rate from now on."""
        chars = request_chars(messages, tools)
        if chars > 0 and prompt_tokens > 0:
            self.tokens_per_char = prompt_tokens / chars * CALIBRATION_MARGIN
            self.calibrated = True
