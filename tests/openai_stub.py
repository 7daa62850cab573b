"""A scripted OpenAI-compatible server on loopback: each POST to /chat/completions gets the next scripted reply.

A request with `stream: true` is answered as llama.cpp's server answers it: server-sent events, one chunk for the
role, one per piece of text or tool call, a usage chunk, then [DONE]. `Stall` holds a reply back the way a slow
server does (headers at once, the first token after the delay), optionally with llama.cpp's prompt_progress events.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any] | tuple[int, bytes] | Callable[[dict[str, Any]], dict[str, Any]]


def tool_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    """One assistant message asking for one tool call, as an OpenAI chat completion's message."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}]}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@dataclass(frozen=True)
class Stall:
    """`reply`, its first token held back `seconds` (the headers go at once); progress events every `progress_s` if set."""

    seconds: float
    reply: Reply
    progress_s: float | None = None


@dataclass
class Stub:
    base_url: str
    script: list[Reply | Stall]
    requests: list[dict[str, Any]] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: ["stub-model-7b"])
    props: dict[str, Any] | None = None  # served at /props (llama.cpp's page) when set
    in_flight: threading.Event = field(default_factory=threading.Event)  # set while a reply is held back
    release: threading.Event = field(default_factory=threading.Event)  # ends every stall (set when the stub closes)


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub-model-7b",
            "choices": [{"index": 0, "message": message, "finish_reason": reason}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


def _chunks(message: dict[str, Any], prompt_chars: int) -> list[dict[str, Any]]:
    """The stream llama.cpp sends for `message`: role, text pieces, tool-call pieces (name, then arguments in two), usage."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": "stub-model-7b",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    out = [chunk({"role": "assistant", "content": None})]
    text = message.get("content") or ""
    out += [chunk({"content": text[i:i + 7]}) for i in range(0, len(text), 7)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function", {})
        arguments = function.get("arguments", "")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        half = len(arguments) // 2
        out.append(chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function",
                                          "function": {"name": function.get("name"), "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}) for part in (arguments[:half], arguments[half:])
                if part]
    out.append(chunk({}, "tool_calls" if message.get("tool_calls") else "stop"))
    out.append({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": max(prompt_chars // 4, 1), "completion_tokens": max(len(json.dumps(message)) // 4, 1)}})
    return out


@contextmanager
def scripted_endpoint(script: list[Reply | Stall], props: dict[str, Any] | None = None) -> Iterator[Stub]:
    """Serve `script` on 127.0.0.1 under /api/v1 (Lemonade's prefix); replies are consumed in order."""
    stub = Stub(base_url="", script=list(script), props=props)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

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
            elif self.path == "/props" and stub.props is not None:
                self._send(200, json.dumps(stub.props).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def _event(self, payload: Any) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            line = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()

        def _stream(self, message: dict[str, Any], body: dict[str, Any], stall: Stall | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            if stall is not None:
                stub.in_flight.set()
                deadline = time.monotonic() + stall.seconds
                while (left := deadline - time.monotonic()) > 0 and not stub.release.is_set():
                    stub.release.wait(min(left, stall.progress_s or left))
                    if stall.progress_s and not stub.release.is_set():
                        done = int(100 * (1 - max(deadline - time.monotonic(), 0) / stall.seconds))
                        self._event({"choices": [], "prompt_progress": {"total": 100, "cache": 0, "processed": done, "time_ms": 0}})
                stub.in_flight.clear()
                if stub.release.is_set():
                    return
            for chunk in _chunks(message, len(json.dumps(body.get("messages", [])))):
                self._event(chunk)
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")

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
            stall = reply if isinstance(reply, Stall) else None
            reply = stall.reply if stall is not None else reply
            try:
                if isinstance(reply, tuple):
                    self._send(*reply)
                    return
                message = reply(body) if callable(reply) else reply
                if body.get("stream"):
                    self._stream(message, body, stall)
                else:
                    self._send(200, json.dumps(_completion(message)).encode())
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout, Ctrl-C): nothing to answer
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
