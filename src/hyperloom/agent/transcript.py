"""The agent's transcript: every message, tool call and result, rewritten atomically after each event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperloom import __version__
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.evidence import utc_now

FORMAT = "hyperloom.agent_transcript/1"


STATUSES = ("running", "answered", "turn_limit", "interrupted", "error")


class Transcript:
    """A JSON file that is complete and valid after every step, so a crash or a kill loses nothing said so far."""

    def __init__(self, path: Path, *, endpoint: str, model: str, prompt: str, max_turns: int) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "format": FORMAT,
            "hyperloom": __version__,
            "endpoint": endpoint,
            "model": model,
            "prompt": prompt,
            "max_turns": max_turns,
            "started_at": utc_now().isoformat(),
            "finished_at": None,
            "status": "running",
            "turns": 0,
            "context": None,
            "tools": [],
            "requests": [],
            "tool_calls": [],
            "outside_material": [],
            "messages": [],
            "error": None,
        }
        self._save()

    def _save(self) -> None:
        write_bytes_atomic(self.path, (json.dumps(self.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))

    def start(self, tools: list[str]) -> None:
        self.data["tools"] = tools
        self._save()

    def context(self, context: dict[str, Any]) -> None:
        self.data["context"] = context
        self._save()

    def request(self, entry: dict[str, Any]) -> None:
        """One request as sent: its turn, prompt tokens (and how they were counted), max_tokens, the tools offered."""
        self.data["requests"].append(entry)
        self._save()

    def reply(self, stats: dict[str, Any]) -> None:
        """What the server said about the last request (usage.prompt_tokens, time to first token)."""
        self.data["requests"][-1].update(stats)
        self._save()

    def outside(self, turn: int, call_id: str, citation: dict[str, Any]) -> None:
        """A lookup's source: outside material, never a measurement."""
        self.data["outside_material"].append({"turn": turn, "call_id": call_id, "tag": "OUTSIDE", **citation})
        self._save()

    def messages(self, messages: list[dict[str, Any]]) -> None:
        self.data["messages"] = list(messages)
        self._save()

    def tool_call(self, turn: int, call: dict[str, Any], result: str, is_error: bool, elapsed_s: float, side: str = "mcp") -> None:
        """`side`: "mcp" (a Hyperloom tool), "agent" (list_tools, use_tools, read_skill) or "outside" (a web lookup)."""
        self.data["tool_calls"].append({
            "turn": turn, "id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"],
            "side": side, "is_error": is_error, "result": result, "elapsed_s": round(elapsed_s, 6),
        })
        self.data["turns"] = turn
        self._save()

    def finish(self, status: str, turns: int | None = None, error: str | None = None) -> None:
        assert status in STATUSES, status
        self.data.update(status=status, finished_at=utc_now().isoformat(), error=error)
        if turns is not None:
            self.data["turns"] = turns
        self._save()
