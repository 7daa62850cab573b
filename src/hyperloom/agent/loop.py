"""The tool-calling loop: the model proposes calls, the MCP server runs them, results go back, until an answer.

A call to an unknown tool, arguments that are not a JSON object, or a tool error is answered to
the model as an `ERROR:` tool message, and the loop goes on until it answers or the turn limit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from mcp import ClientSession
from mcp.types import Tool

from hyperloom.agent.endpoint import ChatEndpoint
from hyperloom.agent.transcript import Transcript

PREFIX = "mcp__hyperloom__"  # the names Claude Code gives these tools (the skill calls them by their bare names under any prefix)


def function_specs(tools: list[Tool]) -> list[dict[str, Any]]:
    """MCP tools as OpenAI function definitions, named as the skill names them."""
    return [
        {"type": "function", "function": {"name": PREFIX + t.name, "description": t.description or "", "parameters": t.input_schema}}
        for t in tools
    ]


def result_text(result: Any) -> str:
    """What the model reads from a tool result: its text blocks, prefixed ERROR: when it failed."""
    text = "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text")
    return f"ERROR: {text}" if result.is_error else text


@dataclass
class Outcome:
    status: str  # "answered" or "turn_limit"
    answer: str
    turns: int


CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _dispatch(call: dict[str, Any], known: set[str], call_tool: CallTool) -> tuple[str, bool]:
    """Run one tool call; every way it can fail becomes a message for the model."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    tool = name.removeprefix(PREFIX)
    if tool not in known:
        listed = ", ".join(PREFIX + k for k in sorted(known))
        return f"ERROR: unknown tool {name!r}. Available tools: {listed}.", True
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return f"ERROR: the arguments for {name} are not valid JSON ({exc.msg} at column {exc.colno}). Send a JSON object.", True
    if not isinstance(arguments, dict):
        return f"ERROR: the arguments for {name} must be a JSON object, not {type(arguments).__name__}.", True
    try:
        result = await call_tool(tool, arguments)
    except Exception as exc:  # a protocol failure (timeout, server gone) is reported to the model, not raised
        return f"ERROR: calling {name} failed: {exc}", True
    return result_text(result), bool(result.is_error)


async def run_loop(
    endpoint: ChatEndpoint,
    model: str,
    session: ClientSession,
    instructions: str,
    prompt: str,
    transcript: Transcript,
    max_turns: int,
    tool_timeout_s: float = 600.0,
    on_event: Callable[[str], None] = lambda line: None,
) -> Outcome:
    tools = (await session.list_tools()).tools
    specs = function_specs(tools)
    known = {t.name for t in tools}
    transcript.start(tools=[spec["function"]["name"] for spec in specs])
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}, {"role": "user", "content": prompt}]
    transcript.messages(messages)

    async def call_tool(tool: str, arguments: dict[str, Any]) -> Any:
        return await session.call_tool(tool, arguments, read_timeout_seconds=tool_timeout_s)

    for turn in range(1, max_turns + 1):
        reply = await anyio.to_thread.run_sync(endpoint.complete, model, messages, specs)
        messages.append(reply)
        transcript.messages(messages)
        calls = reply.get("tool_calls", [])
        if not calls:
            transcript.finish("answered", turns=turn)
            return Outcome("answered", reply["content"], turn)
        for call in calls:
            on_event(f"→ {call['function']['name']} {call['function']['arguments'][:200]}")
            started = time.monotonic()
            text, is_error = await _dispatch(call, known, call_tool)
            on_event(f"← {'error' if is_error else 'ok'}: {text[:200]}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
            transcript.tool_call(turn, call, text, is_error, time.monotonic() - started)
            transcript.messages(messages)
    transcript.finish("turn_limit", turns=max_turns)
    return Outcome("turn_limit", "", max_turns)
