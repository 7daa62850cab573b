"""A minimal client for one OpenAI-compatible endpoint (Lemonade by default): list models, complete a chat.

Plain urllib with proxies disabled, so requests go to the configured address and nowhere else.
Every failure becomes a HyperloomError that names the endpoint and what to do.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from hyperloom.core.errors import HyperloomError

DEFAULT_BASE_URL = "http://localhost:13305/api/v1"  # Lemonade Server's default port and API prefix
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_EXCERPT = 200


@dataclass(frozen=True)
class ChatEndpoint:
    base_url: str
    api_key: str | None = None
    timeout_s: float = 300.0

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = self.base_url.rstrip("/") + path
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with _OPENER.open(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:_EXCERPT].decode("utf-8", "replace").strip() or exc.reason
            raise HyperloomError(f"the model endpoint {url} answered HTTP {exc.code}: {detail}", _next_step(exc.code)) from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HyperloomError(
                f"could not reach the model endpoint {url} ({reason})",
                "start Lemonade Server (or the OpenAI-compatible server you use), or pass --base-url with its address",
            ) from exc
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            excerpt = raw[:_EXCERPT].decode("utf-8", "replace")
            raise HyperloomError(
                f"the model endpoint {url} answered with something that is not JSON: {excerpt!r}",
                "check that --base-url points at an OpenAI-compatible API (it usually ends in /v1 or /api/v1)",
            ) from exc

    def models(self) -> list[str]:
        """Ids of the models the endpoint serves (GET /models)."""
        payload = self._request("GET", "/models")
        entries = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(entries, list):
            raise HyperloomError(f"{self.base_url}/models did not list models (no `data` array)", "pass --model explicitly")
        return [str(entry["id"]) for entry in entries if isinstance(entry, dict) and entry.get("id")]

    def complete(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message of one chat completion, with tool calls normalized."""
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": False}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        payload = self._request("POST", "/chat/completions", body)
        return parse_completion(payload, self.base_url)


def _next_step(status: int) -> str:
    if status in (401, 403):
        return "pass --api-key (Lemonade reads LEMONADE_API_KEY when it requires one)"
    if status == 404:
        return "check --base-url and --model (list the models with GET <base-url>/models)"
    return "read the endpoint's message above; check that the model is loaded and supports tool calling"


def parse_completion(payload: Any, where: str) -> dict[str, Any]:
    """choices[0].message as {role, content, tool_calls?}; refuses anything else."""
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
    content = message.get("content")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments", "")
        calls.append({
            "id": str(call.get("id") or f"call_{index}"),
            "type": "function",
            "function": {
                "name": str(function.get("name", "")),
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        })
    if calls:
        out["tool_calls"] = calls
    return out
