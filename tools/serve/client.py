"""One streamed request to an OpenAI-compatible server, timed chunk by chunk; and the few JSON pages the sweep reads.

httpx2 (the HTTP client the MCP SDK already brings) with trust_env off: no proxy, no .netrc, no redirect, so
nothing but the named server is contacted. A failed request is a record with its reason, never an exception.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2

from hyperloom.core.errors import HyperloomError

_EXCERPT_CHARS = 240
_CONTEXT_MARKS = ("exceeds the available context size", "exceed_context_size_error", "maximum context length", "context length is only")


@dataclass
class Record:
    """What one request measured; times in seconds from the moment it was sent."""

    ok: bool = False
    error: str | None = None
    timeout: bool = False
    ttft_s: float | None = None
    e2e_s: float | None = None
    chunk_times_s: list[float] = field(default_factory=list)
    output_tokens: int | None = None
    input_tokens: int | None = None
    cached_tokens: int | None = None
    turn: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0

    @property
    def itl_s(self) -> list[float]:
        times = self.chunk_times_s
        return [b - a for a, b in zip(times, times[1:])]


def root_url(base_url: str) -> str:
    """The server's origin (scheme, host, port): where llama.cpp's /props and the /metrics pages live."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def new_client(base_url: str, api_key: str | None, connections: int, request_timeout_s: float) -> httpx2.AsyncClient:
    """One connection per stream (and a few for the capacity pages); a queued request may wait for its first byte
    as long as a whole request may take."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx2.Limits(max_connections=connections + 4, max_keepalive_connections=connections + 4)
    timeout = httpx2.Timeout(connect=10.0, read=request_timeout_s, write=30.0, pool=request_timeout_s)
    return httpx2.AsyncClient(base_url=base_url, headers=headers, limits=limits, trust_env=False, follow_redirects=False, timeout=timeout)


def request_body(api: str, model: str, prompt: str | list[dict[str, str]], output_tokens: int, force_output_length: bool) -> dict[str, Any]:
    """A streamed request; `prompt` is a text, or a conversation (messages) that the completions API gets as one text."""
    body: dict[str, Any] = {"model": model, "max_tokens": output_tokens, "stream": True, "stream_options": {"include_usage": True}}
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if api == "chat":
        body["messages"] = messages
    else:
        body["prompt"] = prompt if isinstance(prompt, str) else render_messages(messages)
    if force_output_length:
        # llama.cpp, vLLM and SGLang read both; a server that does not know them ignores them.
        body["ignore_eos"] = True
        body["min_tokens"] = output_tokens
    return body


def render_messages(messages: list[dict[str, str]]) -> str:
    """A conversation as one completion prompt: each message's role and text, in order (a longer conversation extends the shorter's
    text)."""
    return "".join(f"{m['role']}: {m['content']}\n\n" for m in messages)


def is_context_error(error: str | None) -> bool:
    """Whether a server refused a request for not fitting its context (llama.cpp exceed_context_size_error, vLLM's maximum context
    length)."""
    return bool(error) and any(mark in error for mark in _CONTEXT_MARKS)


def _cached_tokens(chunk: dict[str, Any], usage: Any) -> int | None:
    """Prompt tokens the server took from its prefix cache: usage.prompt_tokens_details.cached_tokens, else llama.cpp's timings.cache_n."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return details["cached_tokens"]
    timings = chunk.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return timings["cache_n"]
    return None


def _chunk_text(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    if isinstance(choice.get("text"), str):
        return choice["text"]
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return "".join(v for k in ("content", "reasoning_content") if isinstance(v := delta.get(k), str))
    return ""


async def stream_request(client: httpx2.AsyncClient, api: str, body: dict[str, Any], timeout_s: float) -> Record:
    """Send one streaming request; the record says how long the first text took, each gap after it, and the end."""
    path = "/chat/completions" if api == "chat" else "/completions"
    record = Record(started_at=time.perf_counter())
    try:
        with anyio.fail_after(timeout_s):
            await _read_stream(client, path, body, record)
    except TimeoutError:
        record.ok, record.timeout = False, True
        record.error = f"no end of stream after {timeout_s:g} s ({len(record.chunk_times_s)} chunks of text by then)"
    except httpx2.HTTPError as exc:
        record.ok = False
        record.error = _transport_error(exc, record)
    record.finished_at = time.perf_counter()
    if record.ok:
        record.e2e_s = record.finished_at - record.started_at
    return record


async def _read_stream(client: httpx2.AsyncClient, path: str, body: dict[str, Any], record: Record) -> None:
    done = False
    events = 0
    usage_tokens: int | None = None
    async with client.stream("POST", path, json=body) as response:
        if response.status_code != 200:
            detail = (await response.aread())[:_EXCERPT_CHARS].decode("utf-8", "replace").strip()
            record.error = f"HTTP {response.status_code}: {detail or response.reason_phrase}"
            return
        async for line in response.aiter_lines():
            if not line.strip() or line.startswith(":"):
                continue
            if not line.startswith("data:"):
                record.error = f"the answer is not a server-sent event stream: {line[:_EXCERPT_CHARS]!r}"
                return
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(payload)
            except json.JSONDecodeError:
                record.error = f"a stream chunk is not JSON: {payload[:_EXCERPT_CHARS]!r}"
                return
            if not isinstance(chunk, dict):
                record.error = f"a stream chunk is not an object: {payload[:_EXCERPT_CHARS]!r}"
                return
            if "error" in chunk:
                record.error = f"the server sent an error in the stream: {json.dumps(chunk['error'])[:_EXCERPT_CHARS]}"
                return
            events += 1
            if _chunk_text(chunk):
                now = time.perf_counter() - record.started_at
                if record.ttft_s is None:
                    record.ttft_s = now
                record.chunk_times_s.append(now)
            usage = chunk.get("usage")
            if (cached := _cached_tokens(chunk, usage)) is not None:
                record.cached_tokens = cached
            if isinstance(usage, dict):
                usage_tokens = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else usage_tokens
                if isinstance(usage.get("prompt_tokens"), int):
                    record.input_tokens = usage["prompt_tokens"]
    if not done:
        record.error = f"the stream closed early, without [DONE], after {len(record.chunk_times_s)} chunks of text"
        return
    if record.ttft_s is None and not usage_tokens:
        record.error = f"the stream ended without any text ({events} chunks)"
        return
    # Tokens that render as nothing (a control token) still count when the server's usage says so; the request then has
    # no time to first text, and its latency is only end to end.
    record.output_tokens = usage_tokens if usage_tokens is not None else len(record.chunk_times_s)
    record.ok = True


def _transport_error(exc: httpx2.HTTPError, record: Record) -> str:
    if isinstance(exc, httpx2.ConnectError):
        return f"could not connect ({exc})"
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        return f"the connection broke after {len(record.chunk_times_s)} chunks of text ({exc})"
    return f"{type(exc).__name__}: {exc}"


async def get_json(client: httpx2.AsyncClient, url: str, what: str) -> Any:
    """A JSON page of the server; an answer that is not one is an error naming the page."""
    try:
        response = await client.get(url, timeout=30.0)
    except httpx2.HTTPError as exc:
        raise HyperloomError(f"could not reach {what} at {url} ({type(exc).__name__}: {exc})",
                             "start the server, or check base_url (host, port and the /v1 or /api/v1 prefix)") from exc
    if response.status_code != 200:
        raise HyperloomError(f"{what} at {url} answered HTTP {response.status_code}: {response.text[:_EXCERPT_CHARS]!r}",
                             "check base_url and the API key (api_key_env)")
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyperloomError(f"{what} at {url} answered something that is not JSON: {response.text[:_EXCERPT_CHARS]!r}",
                             "check that base_url points at an OpenAI-compatible API (it usually ends in /v1 or /api/v1)") from exc


async def get_optional(client: httpx2.AsyncClient, url: str) -> httpx2.Response | None:
    """A page the server may not have (llama.cpp /props, /metrics): None when it is absent or unreachable."""
    try:
        response = await client.get(url, timeout=10.0)
    except httpx2.HTTPError:
        return None
    return response if response.status_code == 200 else None


@dataclass(frozen=True)
class ListedModel:
    """One entry of /models: its id and the context of one sequence where the server says it (vLLM max_model_len, llama.cpp meta.n_ctx)."""

    id: str
    context_tokens: int | None


async def list_models(client: httpx2.AsyncClient) -> list[ListedModel]:
    payload = await get_json(client, "/models", "the /models page")
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        raise HyperloomError(f"/models did not list models (no `data` array): {json.dumps(payload)[:_EXCERPT_CHARS]}",
                             "check base_url, or pass model explicitly")
    return [ListedModel(str(entry["id"]), _context_of(entry)) for entry in entries if isinstance(entry, dict) and entry.get("id")]


def _context_of(entry: dict[str, Any]) -> int | None:
    meta = entry.get("meta")
    for value in (entry.get("max_model_len"), meta.get("n_ctx") if isinstance(meta, dict) else None):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
