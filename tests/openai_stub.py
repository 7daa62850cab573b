"""A scripted OpenAI-compatible server on loopback: each POST to /chat/completions gets the next scripted reply."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any] | tuple[int, bytes] | Callable[[dict[str, Any]], dict[str, Any]]


def tool_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    """One assistant message asking for one tool call, as an OpenAI chat completion's message."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}]}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@dataclass
class Stub:
    base_url: str
    script: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: ["stub-model-7b"])


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub-model-7b",
            "choices": [{"index": 0, "message": message, "finish_reason": reason}]}


@contextmanager
def scripted_endpoint(script: list[Reply]) -> Iterator[Stub]:
    """Serve `script` on 127.0.0.1 under /api/v1 (Lemonade's prefix); replies are consumed in order."""
    stub = Stub(base_url="", script=list(script))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/api/v1/models":
                self._send(200, json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in stub.models]}).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/api/v1/chat/completions":
                self._send(404, b'{"error": "not found"}')
                return
            stub.requests.append(body)
            if not stub.script:
                self._send(500, b'{"error": "script exhausted"}')
                return
            reply = stub.script[0] if callable(stub.script[0]) and len(stub.script) == 1 else stub.script.pop(0)
            if isinstance(reply, tuple):
                self._send(*reply)
            else:
                message = reply(body) if callable(reply) else reply
                self._send(200, json.dumps(_completion(message)).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
