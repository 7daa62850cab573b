"""The agent's transcript: every message, tool call and result, rewritten atomically after each event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperloom import __version__
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.evidence import utc_now

FORMAT = "hyperloom.agent_transcript/1"


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
            "tools": [],
            "tool_calls": [],
            "messages": [],
            "error": None,
        }
        self._save()

    def _save(self) -> None:
        write_bytes_atomic(self.path, (json.dumps(self.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))

    def start(self, tools: list[str]) -> None:
        self.data["tools"] = tools
        self._save()

    def messages(self, messages: list[dict[str, Any]]) -> None:
        self.data["messages"] = list(messages)
        self._save()

    def tool_call(self, turn: int, call: dict[str, Any], result: str, is_error: bool, elapsed_s: float) -> None:
        self.data["tool_calls"].append({
            "turn": turn, "id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"],
            "is_error": is_error, "result": result, "elapsed_s": round(elapsed_s, 6),
        })
        self.data["turns"] = turn
        self._save()

    def finish(self, status: str, turns: int | None = None, error: str | None = None) -> None:
        self.data.update(status=status, finished_at=utc_now().isoformat(), error=error)
        if turns is not None:
            self.data["turns"] = turns
        self._save()
