"""The server's own tokenizer, where it serves one: count a text's tokens without sending a request that must fit a slot.

llama.cpp's llama-server: POST /tokenize {"content", "add_special": true} -> {"tokens": [...]} (with the BOS token a
completion request counts too). vLLM: POST /tokenize {"model", "prompt"} -> {"count": n}. Both at the server's origin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2

from hyperloom.tools.serve.models import ServerKind

Counter = Callable[[str], Awaitable[int | None]]
"""A text's token count as the server's tokenizer gives it (None when it did not answer)."""


def tokenize_body(kind: ServerKind, model: str, text: str) -> dict[str, object]:
    if kind == "vllm":
        return {"model": model, "prompt": text}
    return {"content": text, "add_special": True}


def token_count(payload: object) -> int | None:
    """The count in a /tokenize answer of either server; None for anything else."""
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("count"), int):
        return payload["count"]
    tokens = payload.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


async def server_counter(client: httpx2.AsyncClient, root: str, kind: ServerKind, model: str) -> Counter | None:
    """A counter backed by {root}/tokenize when the server answers a probe with a count; None when it has no tokenizer page."""

    async def count(text: str) -> int | None:
        try:
            response = await client.post(f"{root}/tokenize", json=tokenize_body(kind, model, text), timeout=30.0)
        except httpx2.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            return token_count(response.json())
        except ValueError:
            return None

    return count if await count("the") else None
