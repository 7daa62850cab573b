"""One OpenAI-compatible endpoint (Lemonade by default): list its models, stream one chat completion.

httpx2 with trust_env off (no proxy, no .netrc, no redirect), so requests go to the configured address and
nowhere else. A refused connection, a server that is slow to send its first token, a server that stalls
mid-reply and an answer that is not a chat completion are four different errors, each naming what to do.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2

from hyperloom.core.errors import HyperloomError

DEFAULT_BASE_URL = "http://localhost:13305/api/v1"  # Lemonade Server's default port and API prefix
CONNECT_TIMEOUT_S = 10.0
_EXCERPT = 200
# llama.cpp's refusal of a prompt longer than the slot: "request (17981 tokens) exceeds the available context size (4096 tokens)"
_OVERFLOW = re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)")


@dataclass(frozen=True)
class ChatEndpoint:
    base_url: str
    api_key: str | None = None
    timeout_s: float = 300.0  # the longest silence accepted from a server that has the request (no token, no progress)
    progress_interval_s: float = 10.0  # how often a wait for the first token is reported

    @property
    def root(self) -> str:
        """The server's origin, where llama.cpp's /props, /slots, /tokenize and /apply-template live."""
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc, "", "", ""))

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


class EndpointDown(HyperloomError):
    """Nothing accepts connections at the endpoint's address."""


class EndpointSlow(HyperloomError):
    """The server took the request but sent no first token (or stopped sending) within the time allowed."""


class ContextOverflow(Exception):
    """The server refused the prompt as longer than its context, with its own count."""

    def __init__(self, prompt_tokens: int, context_tokens: int) -> None:
        self.prompt_tokens, self.context_tokens = prompt_tokens, context_tokens
        super().__init__(f"request ({prompt_tokens} tokens) exceeds the available context size ({context_tokens} tokens)")


@dataclass
class Reply:
    """One chat completion: the assistant message and what the server said about the work."""

    message: dict[str, Any]
    prompt_tokens: int | None = None  # usage.prompt_tokens, the server's own count
    completion_tokens: int | None = None
    finish_reason: str | None = None
    first_token_s: float | None = None
    elapsed_s: float = 0.0
    prompt_tokens_per_s: float | None = None  # llama.cpp timings.prompt_per_second, else prompt_tokens / first_token_s
    streamed: bool = True


Progress = Callable[[str], None]


def new_client(endpoint: ChatEndpoint) -> httpx2.AsyncClient:
    """Reads have no transport timeout: the stream reader bounds every wait itself, so a slow first token is
    told from a dead server."""
    headers = {"Accept": "application/json, text/event-stream"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    timeout = httpx2.Timeout(connect=CONNECT_TIMEOUT_S, read=None, write=60.0, pool=CONNECT_TIMEOUT_S)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False, follow_redirects=False)


def _unreachable(url: str, exc: BaseException) -> EndpointDown:
    return EndpointDown(
        f"could not reach the model endpoint {url} ({type(exc).__name__}: {exc or 'no answer'}): nothing accepts connections there",
        "start Lemonade Server (or the OpenAI-compatible server you use), or pass --base-url with its address",
    )


async def get_json(client: httpx2.AsyncClient, url: str) -> Any:
    """A JSON page of the endpoint; an unreachable server is EndpointDown, any other answer an error naming the page."""
    try:
        response = await client.get(url, timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=30.0))
    except httpx2.ConnectError as exc:
        raise _unreachable(url, exc) from exc
    except httpx2.HTTPError as exc:
        raise HyperloomError(f"the model endpoint {url} did not answer ({type(exc).__name__}: {exc})",
                             "check that the server is up and --base-url") from exc
    if response.status_code != 200:
        raise HyperloomError(f"the model endpoint {url} answered HTTP {response.status_code}: {_excerpt(response.content)}",
                             _next_step(response.status_code))
    return _json(response.content, url)


async def get_optional(client: httpx2.AsyncClient, url: str, body: dict[str, Any] | None = None) -> Any:
    """A page the server may not have (llama.cpp's /props, Lemonade's /health): its JSON, or None."""
    try:
        if body is None:
            response = await client.get(url, timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=30.0))
        else:
            response = await client.post(url, json=body, timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=30.0))
    except httpx2.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


async def list_models(client: httpx2.AsyncClient, endpoint: ChatEndpoint) -> list[dict[str, Any]]:
    """The /models entries (objects with an id)."""
    payload = await get_json(client, endpoint.url("/models"))
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        raise HyperloomError(f"{endpoint.url('/models')} did not list models (no `data` array)", "pass --model explicitly")
    return [entry for entry in entries if isinstance(entry, dict) and entry.get("id")]


def _excerpt(raw: bytes) -> str:
    return raw[:_EXCERPT].decode("utf-8", "replace").strip()


def _json(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyperloomError(
            f"the model endpoint {url} answered with something that is not JSON: {_excerpt(raw)!r}",
            "check that --base-url points at an OpenAI-compatible API (it usually ends in /v1 or /api/v1)",
        ) from exc


def _next_step(status: int) -> str:
    if status in (401, 403):
        return "pass --api-key (Lemonade reads LEMONADE_API_KEY when it requires one)"
    if status == 404:
        return "check --base-url and --model (list the models with GET <base-url>/models)"
    return "read the endpoint's message above; check that the model is loaded and supports tool calling"


@dataclass
class _Accumulator:
    """The pieces of a streamed message, put back together."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> bool:
        """Fold one chunk in; True when it carried generated text or a tool call (a token, not progress)."""
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return False
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        token = False
        if isinstance(delta.get("content"), str) and delta["content"]:
            self.content.append(delta["content"])
            token = True
        if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
            token = True  # thinking counts as a first token; it is not part of the answer
        for position, part in enumerate(delta.get("tool_calls") or []):
            if not isinstance(part, dict):
                continue
            index = part.get("index") if isinstance(part.get("index"), int) else position
            call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
            call["id"] = part.get("id") or call["id"]
            function = part.get("function") if isinstance(part.get("function"), dict) else {}
            call["name"] += function.get("name") or ""
            arguments = function.get("arguments")
            call["arguments"] += arguments if isinstance(arguments, str) else (json.dumps(arguments) if arguments is not None else "")
            token = True
        return token

    def message(self) -> dict[str, Any]:
        calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                 for _, c in sorted(self.calls.items())]
        return normalize_message({"role": "assistant", "content": "".join(self.content), "tool_calls": calls})


async def stream_chat(
    client: httpx2.AsyncClient, endpoint: ChatEndpoint, body: dict[str, Any], first_token_timeout_s: float, on_progress: Progress
) -> Reply:
    """POST /chat/completions with stream on; reads events until [DONE], each wait bounded.

    The first token may take up to `first_token_timeout_s`; any silence after it (or after a prompt-progress
    event, which llama.cpp sends with return_progress) up to the endpoint's timeout_s."""
    url = endpoint.url("/chat/completions")
    started = time.monotonic()
    state = _Accumulator()
    reply = Reply(message={})
    waiting: dict[str, Any] = {"first": True, "progress": None}

    async def ticker() -> None:
        while True:
            await anyio.sleep(endpoint.progress_interval_s)
            if waiting["first"]:
                progress = waiting["progress"]
                seen = f"; the server has read {progress[0]:,} of {progress[1]:,} prompt tokens" if progress else ""
                on_progress(f"… waiting for the first token: {time.monotonic() - started:.0f} s{seen}")

    error: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        try:
            await _exchange(client, url, body, state, reply, waiting, started, first_token_timeout_s, endpoint.timeout_s, on_progress)
        except Exception as exc:  # raised after the group, so it is not wrapped in an exception group
            error = exc
        finally:
            group.cancel_scope.cancel()
    if error is not None:
        raise error
    reply.elapsed_s = time.monotonic() - started
    if reply.streamed:
        reply.message = state.message()
        reply.finish_reason = state.finish_reason
        usage, timings = state.usage or {}, state.timings or {}
        reply.prompt_tokens = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
        reply.completion_tokens = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else None
        if isinstance(timings.get("prompt_per_second"), int | float) and timings["prompt_per_second"] > 0:
            reply.prompt_tokens_per_s = float(timings["prompt_per_second"])
    if reply.prompt_tokens_per_s is None and reply.prompt_tokens and reply.first_token_s:
        reply.prompt_tokens_per_s = reply.prompt_tokens / reply.first_token_s
    return reply


async def _exchange(client: httpx2.AsyncClient, url: str, body: dict[str, Any], state: _Accumulator, reply: Reply, waiting: dict[str, Any],
                    started: float, first_token_timeout_s: float, idle_timeout_s: float, on_progress: Progress) -> None:
    request = client.build_request("POST", url, json=body)
    try:
        with anyio.fail_after(first_token_timeout_s):
            response = await client.send(request, stream=True)
    except httpx2.ConnectError as exc:
        raise _unreachable(url, exc) from exc
    except TimeoutError as exc:
        raise _slow(url, first_token_timeout_s, waiting["progress"], headers=False) from exc
    except httpx2.HTTPError as exc:
        raise HyperloomError(f"the model endpoint {url} broke the connection before answering ({type(exc).__name__}: {exc})",
                             "check the server's log; it may have crashed loading the model") from exc
    try:
        await _read(response, url, state, reply, waiting, started, first_token_timeout_s, idle_timeout_s, on_progress)
    finally:
        await response.aclose()


async def _read(response: httpx2.Response, url: str, state: _Accumulator, reply: Reply, waiting: dict[str, Any], started: float,
                first_token_timeout_s: float, idle_timeout_s: float, on_progress: Progress) -> None:
    if response.status_code != 200:
        raw = await response.aread()
        if (match := _OVERFLOW.search(raw.decode("utf-8", "replace"))) is not None:
            raise ContextOverflow(int(match.group(1)), int(match.group(2)))
        raise HyperloomError(f"the model endpoint {url} answered HTTP {response.status_code}: {_excerpt(raw) or response.reason_phrase}",
                             _next_step(response.status_code))
    if "text/event-stream" not in response.headers.get("content-type", ""):
        # a server that ignores `stream` answers one JSON completion
        raw = await response.aread()
        reply.streamed = False
        payload = _json(raw, url)
        reply.message = parse_completion(payload, url)
        usage = payload.get("usage") if isinstance(payload, dict) and isinstance(payload.get("usage"), dict) else {}
        reply.prompt_tokens = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
        reply.first_token_s = time.monotonic() - started
        return
    lines = response.aiter_lines()
    last_event = time.monotonic()
    while True:
        if waiting["first"] and waiting["progress"] is None:
            limit = first_token_timeout_s - (time.monotonic() - started)
        else:
            limit = idle_timeout_s - (time.monotonic() - last_event)
        try:
            with anyio.fail_after(max(limit, 0.001)):
                line = await lines.__anext__()
        except StopAsyncIteration:
            raise HyperloomError(f"the model endpoint {url} closed the stream before [DONE] after {time.monotonic() - started:.1f} s",
                                 "check the server's log (it may have run out of memory or crashed)") from None
        except TimeoutError as exc:
            if waiting["first"]:
                raise _slow(url, first_token_timeout_s if waiting["progress"] is None else idle_timeout_s, waiting["progress"],
                            headers=True) from exc
            raise EndpointSlow(f"the model endpoint {url} stopped sending tokens for {idle_timeout_s:g} s in the middle of a reply",
                               "the server is up but stalled: check its log and load; raise --timeout if it is only slow") from exc
        except httpx2.HTTPError as exc:
            raise HyperloomError(f"the model endpoint {url} broke the stream ({type(exc).__name__}: {exc})",
                                 "check the server's log") from exc
        if not line.strip() or line.startswith(":") or not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError:
            raise HyperloomError(f"the model endpoint {url} sent a stream event that is not JSON: {payload[:_EXCERPT]!r}",
                                 "check that --base-url points at an OpenAI-compatible API") from None
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            text = json.dumps(chunk["error"])
            if (match := _OVERFLOW.search(text)) is not None:
                raise ContextOverflow(int(match.group(1)), int(match.group(2)))
            raise HyperloomError(f"the model endpoint {url} sent an error in the stream: {text[:_EXCERPT]}", _next_step(500))
        last_event = time.monotonic()
        progress = chunk.get("prompt_progress")
        if isinstance(progress, dict) and isinstance(progress.get("total"), int):
            done = int(progress.get("processed", 0)) + int(progress.get("cache", 0))
            if waiting["progress"] is None or done > waiting["progress"][0]:
                on_progress(f"… the server is reading the prompt: {done:,} of {progress['total']:,} tokens")
            waiting["progress"] = (done, progress["total"])
        if state.add(chunk) and waiting["first"]:
            waiting["first"] = False
            reply.first_token_s = last_event - started


def _slow(url: str, waited_s: float, progress: tuple[int, int] | None, headers: bool) -> EndpointSlow:
    seen = f"; it had read {progress[0]:,} of {progress[1]:,} prompt tokens" if progress else ""
    answered = "answered and " if headers else ""
    return EndpointSlow(
        f"the model endpoint {url} is up (it accepted the request) but is slow: it {answered}sent no first token within "
        f"{waited_s:g} s{seen}",
        "the server is not down, only slow: raise --timeout, serve a smaller model or a GPU build, or give it a smaller context; "
        "a second request reuses the prompt it has cached",
    )


def normalize_message(message: dict[str, Any]) -> dict[str, Any]:
    """{role, content, tool_calls?} with string arguments and an id on every call; calls without a function are dropped."""
    content = message.get("content")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            continue
        arguments = function.get("arguments", "")
        calls.append({
            "id": str(call.get("id") or f"call_{index}"),
            "type": "function",
            "function": {"name": str(function["name"]), "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        })
    if calls:
        out["tool_calls"] = calls
    return out


def parse_completion(payload: Any, where: str) -> dict[str, Any]:
    """choices[0].message of a non-streamed completion, normalized; refuses anything else."""
    try:
        message = payload["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (KeyError, IndexError, TypeError) as exc:
        excerpt = json.dumps(payload)[:_EXCERPT]
        raise HyperloomError(
            f"the model endpoint {where} answered JSON that is not an OpenAI chat completion (no choices[0].message): {excerpt}",
            "check that --base-url points at an OpenAI-compatible API",
        ) from exc
    return normalize_message(message)
