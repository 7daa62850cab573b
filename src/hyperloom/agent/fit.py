"""Fitting each request to the server's context: the richest choice whose prompt, counted as the server counts
it, leaves room for a reply; old tool results are elided (the transcript keeps them) before giving up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hyperloom.agent.context import ServerContext, TokenCounter
from hyperloom.core.errors import HyperloomError

ELIDED = "[elided to fit the context: {chars:,} characters; the transcript keeps them]"


@dataclass(frozen=True)
class ReplyBudget:
    max_tokens: int = 2048  # the most a reply may take (sent as max_tokens)
    min_tokens: int = 256  # the least worth asking for: below it the request is refused


@dataclass(frozen=True)
class Choice:
    """One way to send the conversation: its messages, the tool definitions and a label for the transcript."""

    label: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


@dataclass(frozen=True)
class Fitted:
    choice: Choice
    prompt_tokens: int
    counted_by: str
    max_tokens: int


class ContextTooSmall(HyperloomError):
    pass


async def fit(choices: Sequence[Choice], context: ServerContext, counter: TokenCounter, budget: ReplyBudget, what: str) -> Fitted:
    """The first choice that fits; ContextTooSmall with the smallest one's numbers when none does."""
    counts = []
    for choice in choices:
        tokens, how = await counter.count(choice.messages, choice.tools)
        counts.append((tokens, how, choice))
        room = context.tokens - tokens
        if room >= budget.min_tokens:
            return Fitted(choice, tokens, how, min(budget.max_tokens, room))
    tokens, how, smallest = min(counts, key=lambda c: c[0])
    raise ContextTooSmall(
        f"{what} cannot fit the server's context: even the smallest ({smallest.label}, {len(smallest.tools)} tool definitions) is "
        f"{tokens:,} prompt tokens (counted by {how}), and a reply needs at least {budget.min_tokens:,} more: "
        f"{tokens + budget.min_tokens:,} > {context.tokens:,} tokens of context ({context.source})",
        "restart the server with a larger context (llama-server -c 8192; Lemonade: --ctx-size 8192), or pass --context if the "
        "server holds more than it says; a shorter prompt helps too",
    )


def elided_views(messages: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    """The conversation with its oldest tool results elided, one more at a time (the newest turn's results stay)."""
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages))
    old = [i for i, m in enumerate(messages) if m.get("role") == "tool" and i < last_assistant
                    and not str(m.get("content", "")).startswith("[elided")]
    views = []
    view = [dict(m) for m in messages]
    for count, index in enumerate(old, 1):
        view = [dict(m) for m in view]
        view[index]["content"] = ELIDED.format(chars=len(str(messages[index].get("content", ""))))
        views.append((count, view))
    return views


def trim_result(text: str, max_chars: int) -> str:
    """A tool result cut to `max_chars`, saying so (the transcript keeps the whole)."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + (f"\n[truncated: {max_chars:,} of {len(text):,} characters shown to fit the context; the transcript keeps "
                               "the whole result]")
