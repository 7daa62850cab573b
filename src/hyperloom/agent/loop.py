"""The tool-calling loop: the model proposes calls, the MCP server (or the agent itself, for list_tools, use_tools,
read_skill and the opt-in lookups) runs them, results go back, until an answer or the turn limit.

Every request is fitted to the server's context (fit.py) and streamed (endpoint.py). A call to an unknown tool,
arguments that are not a JSON object, or a tool error is answered to the model as an `ERROR:` tool message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import ClientSession

from hyperloom.agent.context import ServerContext, TokenCounter
from hyperloom.agent.endpoint import ChatEndpoint, ContextOverflow, Reply, stream_chat
from hyperloom.agent.fit import Choice, ContextTooSmall, Fitted, ReplyBudget, elided_views, fit, trim_result
from hyperloom.agent.skill_pages import PROMPT_TIERS, SkillPages, system_prompt
from hyperloom.agent.toolset import PREFIX, Toolset
from hyperloom.agent.transcript import Transcript
from hyperloom.agent.web import WebConfig, web_fetch, web_search
from hyperloom.core.errors import HyperloomError

OVERFLOW_RETRIES = 2
FIRST_TOKEN_MARGIN = 3.0  # the first-token wait allowed: this many times the prompt fill the server's own rate predicts


def result_text(result: Any) -> str:
    """What the model reads from a tool result: its text blocks, prefixed ERROR: when it failed."""
    text = "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text")
    return f"ERROR: {text}" if result.is_error else text


@dataclass
class Outcome:
    status: str  # "answered" or "turn_limit"
    answer: str
    turns: int


@dataclass(frozen=True)
class LoopSettings:
    max_turns: int = 20
    tool_timeout_s: float = 600.0


@dataclass
class Conversation:
    """What the loop needs on every turn."""

    client: httpx2.AsyncClient
    endpoint: ChatEndpoint
    model: str
    context: ServerContext
    counter: TokenCounter
    toolset: Toolset
    skill: SkillPages
    transcript: Transcript
    web: WebConfig
    web_client: httpx2.AsyncClient | None
    on_event: Callable[[str], None]
    budget: ReplyBudget = field(default_factory=ReplyBudget)
    prompt_rate_per_s: float | None = None  # the server's prompt fill rate, from its last reply


CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _tool_choices(messages: list[dict[str, Any]], toolset: Toolset, prompt_label: str) -> list[Choice]:
    """Every offered tool, then one fewer at a time (the least wanted goes first), down to the agent's tools only."""
    count = len(toolset.offered())
    return [Choice(f"{prompt_label}{k} of {count} offered Hyperloom tools", messages, toolset.specs(k)) for k in range(count, -1, -1)]


def first_choices(skill: SkillPages, toolset: Toolset, workspace: str, prompt: str) -> list[Choice]:
    """The first request, richest first: the compact prompt with the phase's tools, with fewer, the minimal prompt."""
    choices = []
    for tier in PROMPT_TIERS:
        messages = [{"role": "system", "content": system_prompt(skill, workspace, PREFIX, tier)}, {"role": "user", "content": prompt}]
        choices += _tool_choices(messages, toolset, f"{tier} prompt, ")
    return choices


def turn_choices(messages: list[dict[str, Any]], toolset: Toolset) -> list[Choice]:
    choices = _tool_choices(messages, toolset, "")
    choices += [Choice(f"{n} old tool results elided, the agent's tools only", view, toolset.specs(0))
                for n, view in elided_views(messages)]
    return choices


def _body(conv: Conversation, fitted: Fitted) -> dict[str, Any]:
    body: dict[str, Any] = {"model": conv.model, "messages": fitted.choice.messages, "stream": True,
                            "stream_options": {"include_usage": True}, "max_tokens": fitted.max_tokens}
    if fitted.choice.tools:
        body["tools"] = fitted.choice.tools
        body["tool_choice"] = "auto"
    if conv.context.kind == "llama.cpp":
        body["return_progress"] = True  # prompt-fill progress events while the first token is computed
    return body


def first_token_timeout_s(conv: Conversation, prompt_tokens: int) -> float:
    """--timeout, or longer when the server's measured prompt rate says the fill takes longer."""
    if conv.prompt_rate_per_s:
        return max(conv.endpoint.timeout_s, FIRST_TOKEN_MARGIN * prompt_tokens / conv.prompt_rate_per_s)
    return conv.endpoint.timeout_s


async def _complete(conv: Conversation, turn: int, choices: list[Choice]) -> tuple[Reply, Fitted]:
    """Fit, send, and on the server's own "exceeds the context" refusal recount at its rate and fit again."""
    what = "the first request" if turn == 1 else f"request {turn}"
    for attempt in range(OVERFLOW_RETRIES + 1):
        fitted = await fit(choices, conv.context, conv.counter, conv.budget, what)
        timeout_s = first_token_timeout_s(conv, fitted.prompt_tokens)
        line = (f"{what}: {fitted.prompt_tokens:,} prompt tokens (counted by {fitted.counted_by}) + max_tokens {fitted.max_tokens:,} "
                f"of a {conv.context.tokens:,}-token context ({conv.context.source}); {len(fitted.choice.tools)} tool definitions "
                f"({fitted.choice.label})")
        if turn == 1 or attempt:
            conv.on_event(line)
        conv.transcript.request({"turn": turn, "prompt_tokens_counted": fitted.prompt_tokens, "counted_by": fitted.counted_by,
                                 "max_tokens": fitted.max_tokens, "context_tokens": conv.context.tokens, "choice": fitted.choice.label,
                                 "tools_offered": [t["function"]["name"] for t in fitted.choice.tools],
                                 "first_token_timeout_s": round(timeout_s, 1)})
        try:
            reply = await stream_chat(conv.client, conv.endpoint, _body(conv, fitted), timeout_s, conv.on_event)
        except ContextOverflow as exc:
            conv.transcript.reply({"refused": str(exc), "prompt_tokens_server": exc.prompt_tokens})
            conv.counter.calibrate(fitted.choice.messages, fitted.choice.tools, exc.prompt_tokens)
            if exc.context_tokens < conv.context.tokens:
                conv.context = ServerContext(exc.context_tokens, "the server's refusal of a longer request", "MEASURED", conv.context.kind)
            conv.on_event(f"the server counted {exc.prompt_tokens:,} tokens for {what} (context {exc.context_tokens:,}); fitting it again")
            continue
        if reply.prompt_tokens is not None:
            conv.counter.calibrate(fitted.choice.messages, fitted.choice.tools, reply.prompt_tokens)
            if turn == 1:
                conv.on_event(f"first request: the server counted {reply.prompt_tokens:,} prompt tokens (its usage figure); context "
                              f"{conv.context.tokens:,}")
        if reply.prompt_tokens_per_s:
            conv.prompt_rate_per_s = reply.prompt_tokens_per_s
        conv.transcript.reply({"prompt_tokens_server": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                               "first_token_s": None if reply.first_token_s is None else round(reply.first_token_s, 3),
                               "elapsed_s": round(reply.elapsed_s, 3), "finish_reason": reply.finish_reason, "streamed": reply.streamed})
        return reply, fitted
    raise ContextTooSmall(f"{what} was refused by the server as longer than its context {OVERFLOW_RETRIES + 1} times",
                          "restart the server with a larger context, or pass a smaller --context")


async def _agent_tool(conv: Conversation, turn: int, call: dict[str, Any], name: str, arguments: dict[str, Any]) -> tuple[str, bool, str]:
    """list_tools, use_tools, read_skill, web_fetch, web_search: (text, is_error, side)."""
    if name == "list_tools":
        return conv.toolset.listing(), False, "agent"
    if name == "use_tools":
        text = conv.toolset.use(arguments)
        return text, text.startswith("ERROR:"), "agent"
    if name == "read_skill":
        page = str(arguments.get("page") or "").strip().lower()
        if page in conv.skill.pages:
            return conv.skill.pages[page], False, "agent"
        lead = f"ERROR: no page {page!r}. " if page else ""
        return f"{lead}Pages: {conv.skill.index()}.", bool(page), "agent"
    if name in ("web_fetch", "web_search") and conv.web_client is not None:
        try:
            if name == "web_fetch":
                material = await web_fetch(conv.web_client, str(arguments.get("url", "")), conv.web)
            else:
                material = await web_search(conv.web_client, str(arguments.get("query", "")), conv.web)
        except HyperloomError as exc:
            return f"ERROR: {exc}", True, "outside"
        conv.transcript.outside(turn, call["id"], material.citation)
        return material.text, False, "outside"
    return f"ERROR: {name} is not available", True, "agent"


async def _dispatch(conv: Conversation, turn: int, call: dict[str, Any], call_tool: CallTool) -> tuple[str, bool, str]:
    """Run one tool call; every way it can fail becomes a message for the model."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    tool = name.removeprefix(PREFIX)
    agent_side = tool in conv.toolset.agent_names
    if not agent_side and tool not in conv.toolset.tools:
        listed = ", ".join([PREFIX + k for k in sorted(conv.toolset.tools)] + sorted(conv.toolset.agent_names))
        return f"ERROR: unknown tool {name!r}. Available tools: {listed}.", True, "agent"
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return f"ERROR: the arguments for {name} are not valid JSON ({exc.msg} at column {exc.colno}). Send a JSON object.", True, "agent"
    if not isinstance(arguments, dict):
        return f"ERROR: the arguments for {name} must be a JSON object, not {type(arguments).__name__}.", True, "agent"
    if agent_side:
        return await _agent_tool(conv, turn, call, tool, arguments)
    conv.toolset.called(tool)
    try:
        result = await call_tool(tool, arguments)
    except Exception as exc:  # a protocol failure (timeout, server gone) is reported to the model, not raised
        return f"ERROR: calling {name} failed: {exc}", True, "mcp"
    return result_text(result), bool(result.is_error), "mcp"


def result_chars(conv: Conversation) -> int:
    """The most characters of one tool result a request carries: about a quarter of the context."""
    return max(int(conv.context.tokens / 4 / conv.counter.tokens_per_char), 400)


async def run_loop(conv: Conversation, session: ClientSession, workspace: str, prompt: str, settings: LoopSettings) -> Outcome:
    transcript = conv.transcript
    transcript.start(tools=[PREFIX + n for n in conv.toolset.tools] + sorted(conv.toolset.agent_names))

    async def call_tool(tool: str, arguments: dict[str, Any]) -> Any:
        return await session.call_tool(tool, arguments, read_timeout_seconds=settings.tool_timeout_s)

    messages: list[dict[str, Any]] = []
    for turn in range(1, settings.max_turns + 1):
        choices = first_choices(conv.skill, conv.toolset, workspace, prompt) if turn == 1 else turn_choices(messages, conv.toolset)
        reply, fitted = await _complete(conv, turn, choices)
        if turn == 1:
            messages = list(fitted.choice.messages)
        messages.append(reply.message)
        transcript.messages(messages)
        calls = reply.message.get("tool_calls", [])
        if not calls:
            transcript.finish("answered", turns=turn)
            return Outcome("answered", reply.message["content"], turn)
        for call in calls:
            conv.on_event(f"→ {call['function']['name']} {call['function']['arguments'][:200]}")
            started = time.monotonic()
            text, is_error, side = await _dispatch(conv, turn, call, call_tool)
            conv.on_event(f"← {'error' if is_error else 'ok'}: {text[:200]}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": trim_result(text, result_chars(conv))})
            transcript.tool_call(turn, call, text, is_error, time.monotonic() - started, side)
            transcript.messages(messages)
    transcript.finish("turn_limit", turns=settings.max_turns)
    return Outcome("turn_limit", "", settings.max_turns)
