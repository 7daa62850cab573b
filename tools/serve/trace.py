"""Agent traces: many multi-turn sessions whose context grows each turn with tool results and file reads, sharing long prefixes.

A trace is JSONL, one session a line (the `Session` model; validators/agent_trace.schema.json). Each turn appends its
messages to the conversation, asks for `output_tokens`, and then appends its reply (the recorded one, else seeded words
of that length), so every turn's prompt extends the previous one and the same bytes reach every server a trace is
replayed against. `AgentTraceSpec` generates such sessions, seeded, with every length drawn from a declared distribution.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.workload import WORDS, JsonlKind, read_jsonl

MAX_SESSIONS = 100_000
SESSIONS = JsonlKind("session", "trace", "use a smaller trace; sessions are replayed in turn", "write one session object per line")
MAX_TRACE_TOKENS = 1 << 20
# Chat templates wrap each message in role markers: a bound for their tokens when estimating a conversation's length.
MESSAGE_OVERHEAD_TOKENS = 8


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(min_length=1)


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(min_length=1, description="Appended to the conversation before this turn's request: the task, a tool "
                                                              "result, a file read.")
    output_tokens: int = Field(ge=1, le=MAX_TRACE_TOKENS, description="The reply's length: the request's max_tokens.")
    reply: str | None = Field(None, min_length=1,
                              description="The reply as recorded, appended after the turn; default seeded words of output_tokens.")


class Session(BaseModel):
    """One line of a trace file."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    turns: list[Turn] = Field(min_length=1, max_length=1000)


class Lengths(BaseModel):
    """A token length drawn as median x exp(sigma x N(0, 1)) (log-normal), rounded and clamped to [low, high]; sigma 0 is a fixed length."""

    model_config = ConfigDict(extra="forbid")

    median: int = Field(ge=1, le=MAX_TRACE_TOKENS)
    sigma: float = Field(0.0, ge=0, le=3)
    low: int = Field(1, ge=1)
    high: int = Field(MAX_TRACE_TOKENS, ge=1, le=MAX_TRACE_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> Lengths:
        if not self.low <= self.median <= self.high:
            raise ValueError(f"low {self.low} <= median {self.median} <= high {self.high} does not hold")
        return self

    def draw(self, rng: random.Random) -> int:
        value = self.median * math.exp(self.sigma * rng.gauss(0.0, 1.0)) if self.sigma else self.median
        return min(max(round(value), self.low), self.high)


class AgentTraceSpec(BaseModel):
    """The generator's settings (a .json file for prompts_file): sessions of a coding agent, defaults sized like one."""

    model_config = ConfigDict(extra="forbid")

    shared_prefix_tokens: int = Field(2048, ge=1, le=MAX_TRACE_TOKENS,
                                      description="System prompt and tool definitions, the same in every session.")
    prefix_variants: int = Field(1, ge=1, le=1000, description="Distinct shared prefixes (agents); session i uses prefix i mod this.")
    turns: Lengths = Field(Lengths(median=8, sigma=0.5, low=2, high=40), description="Turns per session (before the context cap).")
    task_tokens: Lengths = Field(Lengths(median=200, sigma=0.6, high=2000), description="The user's task, the first turn's message.")
    tool_result_tokens: Lengths = Field(Lengths(median=400, sigma=1.0, low=16, high=4000),
                                        description="A tool's output, appended every later turn.")
    file_read_probability: float = Field(0.4, ge=0, le=1, description="Chance that a later turn also reads a file.")
    file_read_tokens: Lengths = Field(Lengths(median=1500, sigma=0.7, low=64, high=8000), description="A file's length.")
    files: int = Field(32, ge=1, le=100_000,
                       description="Files in the repository the sessions read: the same file is the same text in every session.")
    output_tokens: Lengths = Field(Lengths(median=150, sigma=0.6, low=8, high=2000), description="A reply's length.")
    max_context_tokens: int = Field(32768, ge=16, le=MAX_TRACE_TOKENS,
                                    description="A session ends (as an agent compacts) before a request would pass this (prompt + reply).")


def words_text(tokens: int, tokens_per_word: float, rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, round(tokens / tokens_per_word))))


def _shared(kind: str, index: int, length: Lengths | int, seed: int, tokens_per_word: float) -> str:
    """The text of shared content (a prefix, a file): the same for every session, drawn from its own seed."""
    rng = random.Random(f"{seed}:{kind}:{index}")
    tokens = length if isinstance(length, int) else length.draw(rng)
    return words_text(tokens, tokens_per_word, rng)


def estimate_tokens(message: Message, tokens_per_word: float, message_tokens: int) -> int:
    """A message's tokens in a request: its words at the measured ratio, plus what the API wraps each message in."""
    return round(len(message.content.split()) * tokens_per_word) + message_tokens


def generate_session(spec: AgentTraceSpec, seed: int, index: int, tokens_per_word: float,
                     message_tokens: int = MESSAGE_OVERHEAD_TOKENS) -> Session:
    """Session `index` of the seeded trace: the same for the same arguments, whatever else is generated. `tokens_per_word`
    and `message_tokens` (role markers around each message) turn the spec's token lengths into text and keep every request
    inside max_context_tokens (prompt + reply)."""
    rng = random.Random(f"{seed}:session:{index}")
    prefix = Message(role="system",
                     content=_shared("prefix", index % spec.prefix_variants, spec.shared_prefix_tokens, seed, tokens_per_word))
    context = estimate_tokens(prefix, tokens_per_word, message_tokens)
    turns: list[Turn] = []
    for number in range(spec.turns.draw(rng)):
        if number == 0:
            free = spec.max_context_tokens - context - 2 * message_tokens
            if free < 2:
                raise HyperloomError(f"the agent trace's shared prefix ({spec.shared_prefix_tokens} tokens) leaves no room for a task and "
                                     f"a reply in max_context_tokens {spec.max_context_tokens}",
                                     "lower shared_prefix_tokens in the trace spec, or give the server a larger context per sequence")
            output = min(spec.output_tokens.draw(rng), free // 2)  # a long first turn is cut to fit: every session has one
            task = Message(role="user", content=words_text(min(spec.task_tokens.draw(rng), free - output), tokens_per_word, rng))
            messages = [task]
        else:
            messages = [Message(role="user", content="Tool result: " + words_text(spec.tool_result_tokens.draw(rng), tokens_per_word, rng))]
            if rng.random() < spec.file_read_probability:
                file = rng.randrange(spec.files)
                messages.append(Message(role="user",
                                        content=f"File {file}: " + _shared("file", file, spec.file_read_tokens, seed, tokens_per_word)))
            output = spec.output_tokens.draw(rng)
        added = sum(estimate_tokens(m, tokens_per_word, message_tokens) for m in messages)
        if context + added + output > spec.max_context_tokens:
            break
        reply = words_text(output, tokens_per_word, rng)
        turns.append(Turn(messages=[prefix, *messages] if number == 0 else messages, output_tokens=output, reply=reply))
        context += added + round(len(reply.split()) * tokens_per_word) + message_tokens
    return Session(id=f"generated-{seed}-{index}", turns=turns)


def conversations(session: Session, tokens_per_word: float) -> list[tuple[list[dict[str, str]], int]]:
    """Every turn's request: the conversation so far (messages as dicts) and its output length. A turn without a recorded
    reply is followed by seeded words of about its output length."""
    history: list[dict[str, str]] = []
    requests = []
    for number, turn in enumerate(session.turns):
        history += [message.model_dump() for message in turn.messages]
        requests.append((list(history), turn.output_tokens))
        reply = turn.reply or words_text(turn.output_tokens, tokens_per_word, random.Random(f"{session.id}:reply:{number}"))
        history.append({"role": "assistant", "content": reply})
    return requests


def load_trace(path: Path, shown: str) -> list[Session]:
    """A trace file's sessions; a line that is not a session is refused with its number and the field at fault."""

    def session(number: int, line: str) -> Session:
        try:
            return Session.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the line"
            raise HyperloomError(f"{shown} line {number} is not an agent-trace session: {where}: {first['msg']}",
                                 "write one {\"id\": ..., \"turns\": [{\"messages\": [...], \"output_tokens\": N}]} object per line "
                                 "(validators/agent_trace.schema.json)") from exc

    return read_jsonl(path, shown, session, SESSIONS, MAX_SESSIONS)


def load_spec(path: Path, shown: str) -> AgentTraceSpec:
    try:
        return AgentTraceSpec.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        raise HyperloomError(f"{shown} is not an agent-trace spec: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}",
                             "fix that field (validators/agent_trace_spec.schema.json lists them), or leave prompts_file out for the "
                             "defaults") from exc


def write_trace(sessions: list[Session], path: Path) -> None:
    """Sessions as trace JSONL: a generated trace kept, so it can be replayed (and edited) as a recorded one."""
    path.write_text("".join(s.model_dump_json(exclude_none=True) + "\n" for s in sessions), encoding="utf-8")


def schemas() -> dict[str, dict[str, Any]]:
    """The committed JSON Schemas of a trace line and of the generator's spec, by file name under validators/."""
    out = {}
    for name, model, title in (("agent_trace", Session, "Hyperloom agent-trace session (one JSONL line)"),
                               ("agent_trace_spec", AgentTraceSpec, "Hyperloom agent-trace generator spec")):
        schema = model.model_json_schema()
        schema.pop("title", None)
        out[name] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"hyperloom.{name}/1", "title": title, **schema}
    return out


def dump_schema(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"
