"""What the levels will send, made to fit the server before any load: calibrated synthetic prompts, a prompts file's
lines, or an agent trace's sessions, each checked against the context of one sequence.

Prompt lengths are sized with the server's own tokenizer where it has one (/tokenize: no slot is used, so nothing can
overflow), then one real request confirms what a request adds (BOS, a chat template). Without a tokenizer the guesses
are real requests, started small (a word is often several tokens) and grown by the measured ratio.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.capacity import ServerFacts
from hyperloom.tools.serve.client import is_context_error, render_messages, request_body, root_url, stream_request
from hyperloom.tools.serve.fit import context_refusal, refuse_unfit
from hyperloom.tools.serve.models import ServeSweepRequest, Workload
from hyperloom.tools.serve.tokens import Counter, server_counter
from hyperloom.tools.serve.trace import MESSAGE_OVERHEAD_TOKENS, AgentTraceSpec, Session, conversations, generate_session, words_text
from hyperloom.tools.serve.workload import calibrate_words, synthetic_prompt

_SMALL_START = 8  # without a tokenizer the first guess is input_tokens / 8 words: fits even a tokenizer of 8 tokens a word
_SAMPLE_WORDS = 200
_CHECKED_SESSIONS = 16
_CONTEXT_MARGIN = 0.9  # generated sessions end by estimated tokens: keep them this far inside a sequence's context


@dataclass(frozen=True)
class TraceInput:
    """An agent trace as asked for: recorded sessions, or a generator spec (the file's or the defaults)."""

    sessions: list[Session] | None
    spec: AgentTraceSpec | None
    source: str


@dataclass
class Plan:
    workload: Workload
    session_for: Callable[[int], list[dict[str, Any]]]
    sustained: bool
    tokens_per_request: int | None


async def prepare(request: ServeSweepRequest, client: httpx2.AsyncClient, model: str, facts: ServerFacts, prompts: list[str] | None,
                  prompts_sha256: str | None, trace: TraceInput | None) -> Plan:
    counter = await server_counter(client, root_url(request.base_url), facts.kind, model)
    probe = _Probe(request, client, model, facts)
    if trace is not None:
        return await _trace_plan(request, model, facts, trace, prompts_sha256, counter, probe)
    base = Workload(api=request.api, input_tokens_requested=None if prompts is not None else request.input_tokens,
                    output_tokens_requested=request.output_tokens, force_output_length=request.force_output_length,
                    prompts_file=request.prompts_file, prompts_sha256=prompts_sha256)
    if prompts is not None:
        return Plan(base, lambda i: [request_body(request.api, model, prompts[i % len(prompts)], request.output_tokens,
                                                  request.force_output_length)],
                    False, None)
    refuse_unfit(facts, request.input_tokens, request.output_tokens)
    words, calibration = await _calibrate(request, counter, probe)
    base.words_per_prompt, base.calibration = words, calibration

    def one(i: int) -> list[dict[str, Any]]:
        return [request_body(request.api, model, synthetic_prompt(words, request.seed, i), request.output_tokens,
                             request.force_output_length)]

    return Plan(base, one, False, request.input_tokens + request.output_tokens)


@dataclass
class _Probe:
    """One real request of one output token: what the server counts for a prompt; a refusal named for what it is."""

    request: ServeSweepRequest
    client: httpx2.AsyncClient
    model: str
    facts: ServerFacts

    async def __call__(self, prompt: str | list[dict[str, str]], what: str) -> int | None:
        body = request_body(self.request.api, self.model, prompt, 1, self.request.force_output_length)
        record = await stream_request(self.client, self.request.api, body, self.request.request_timeout_s)
        if record.ok:
            return record.input_tokens
        if is_context_error(record.error):
            raise context_refusal(self.facts, record.error or "", what)
        raise HyperloomError(f"the first request to {self.request.base_url} failed: {record.error}",
                             "check that the server serves this model and API (api: completions or chat)")


async def _calibrate(request: ServeSweepRequest, counter: Counter | None, probe: _Probe) -> tuple[int, str]:
    target, seed = request.input_tokens, request.seed
    if counter is None:
        async def by_request(prompt: str) -> int | None:
            return await probe(prompt, f"a calibration prompt of {len(prompt.split())} words")

        words, served = await calibrate_words(target, seed, by_request, first_words=max(1, target // _SMALL_START))
        if served is None:
            return target, "none: the server reports no prompt tokens and has no /tokenize (one word per token, ASSUMED)"
        return words, (f"requests grown from {max(1, target // _SMALL_START)} words (no /tokenize): {words} words = {served} tokens as the "
                       "server counted")
    words, counted = await calibrate_words(target, seed, counter)
    prompt = synthetic_prompt(words, seed, 0)
    served, alone = await probe(prompt, f"a prompt of {counted} tokens (its /tokenize count)"), await counter(prompt)
    added = (served - alone) if served is not None and alone is not None else 0
    if added and target - added >= 1:  # a chat template or special tokens the request adds: aim the text below the target by that much
        words, counted = await calibrate_words(target - added, seed, counter, first_words=words)
    return words, f"the server's /tokenize: {words} words = {counted} tokens, and a request adds {added}"


async def _tokens_per_word(counter: Counter | None, probe: _Probe, seed: int) -> tuple[float, str]:
    sample = words_text(_SAMPLE_WORDS, 1.0, random.Random(f"{seed}:sample"))
    if counter is not None and (n := await counter(sample)) and (one := await counter("the")):
        return max(n - one + 1, 1) / _SAMPLE_WORDS, "/tokenize"
    small = " ".join(sample.split()[:32])
    served = await probe(small, "a 32-word sample prompt")
    if served:
        return served / 32, "one request"
    return 1.3, "ASSUMED (the server counts no tokens)"


async def _message_tokens(probe: _Probe) -> int:
    """Tokens the API adds around each message (a chat template's role markers; the completions rendering's role
    label), measured as the difference between requests of four and of two one-word messages."""
    sizes = []
    for n in (2, 4):
        sizes.append(await probe([{"role": "system" if i == 0 else "user", "content": "the"} for i in range(n)],
                                 f"a probe of {n} one-word messages"))
    if sizes[0] is None or sizes[1] is None:
        return MESSAGE_OVERHEAD_TOKENS
    return max(1, -(-(sizes[1] - sizes[0]) // 2))


async def _trace_plan(request: ServeSweepRequest, model: str, facts: ServerFacts, trace: TraceInput, sha256: str | None,
                      counter: Counter | None, probe: _Probe) -> Plan:
    tpw, tpw_source = await _tokens_per_word(counter, probe, request.seed)
    per_message = await _message_tokens(probe)
    spec = trace.spec
    if spec is not None and facts.context_per_slot_tokens is not None:
        spec = spec.model_copy(update={"max_context_tokens": min(spec.max_context_tokens,
                                                                 int(_CONTEXT_MARGIN * facts.context_per_slot_tokens))})

    def session(i: int) -> Session:
        if trace.sessions is not None:
            return trace.sessions[i % len(trace.sessions)]
        assert spec is not None
        return generate_session(spec, request.seed, i, tpw, per_message)

    def bodies(i: int) -> list[dict[str, Any]]:
        return [request_body(request.api, model, messages, output, request.force_output_length)
                for messages, output in conversations(session(i), tpw)]

    longest = await _check_fits(request, facts,
                                [session(i) for i in range(_CHECKED_SESSIONS)] if trace.sessions is None else trace.sessions,
                                counter, tpw, per_message)
    first_messages, _ = conversations(session(0), tpw)[0]
    await probe(first_messages, "the trace's first request")
    outputs = [t.output_tokens for s in (trace.sessions or [session(i) for i in range(_CHECKED_SESSIONS)]) for t in s.turns]
    workload = Workload(api=request.api, input_tokens_requested=None, output_tokens_requested=round(sum(outputs) / len(outputs)),
                        force_output_length=request.force_output_length, prompts_file=request.prompts_file, prompts_sha256=sha256,
                        kind="agent_trace", trace_source=trace.source, trace_sessions=len(trace.sessions) if trace.sessions else None,
                        trace_spec=spec.model_dump() if spec else None, tokens_per_word=round(tpw, 4), longest_request_tokens=longest,
                        calibration=f"tokens per word from {tpw_source}; {per_message} tokens around each message, measured")
    return Plan(workload, bodies, True, longest)


async def _check_fits(request: ServeSweepRequest, facts: ServerFacts, sessions: list[Session], counter: Counter | None, tpw: float,
                      per_message: int) -> int:
    """The longest request (prompt + reply) of the longest sessions, counted by the server's tokenizer where it has one; refused when it
    cannot fit a sequence."""
    finals = []
    for s in sessions:
        messages, output = conversations(s, tpw)[-1]
        finals.append((len(render_messages(messages)), s, messages, output))
    longest = 0
    for _, s, messages, output in sorted(finals, key=lambda f: f[0], reverse=True)[:3]:
        text = render_messages(messages)
        counted = await counter(text) if counter is not None else None
        prompt = counted if counted is not None else round(len(text.split()) * tpw)
        if request.api == "chat":
            prompt += per_message * len(messages)
        refuse_unfit(facts, prompt, output, what=f"session {s.id!r}'s turn {len(s.turns)}")
        longest = max(longest, prompt + output)
    return longest


def trace_input(path: Path | None, shown: str | None) -> TraceInput:
    """The agent trace a request names: a .jsonl of sessions, a .json generator spec, or (no file) the default spec."""
    from hyperloom.tools.serve.trace import load_spec, load_trace

    if path is None:
        return TraceInput(None, AgentTraceSpec(), "generated: the default spec")
    if path.suffix == ".json":
        return TraceInput(None, load_spec(path, shown or str(path)), f"generated: the spec {shown}")
    return TraceInput(load_trace(path, shown or str(path)), None, f"recorded: {shown}")
