"""Whether a request fits the server's context for one sequence, said with the numbers and the server flag to change.

Checked before the first request from what the server says of itself (llama.cpp /props or /slots n_ctx per slot,
vLLM max_model_len, vLLM's KV-cache size); a context-size refusal from the server during the sweep is the same bound.
"""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.capacity import ServerFacts


def larger_context_step(facts: ServerFacts, needed_tokens: int | None = None) -> str:
    """The next step that gives each sequence more context, on this server."""
    if facts.kind == "llama.cpp":
        slots = facts.slots or 1
        example = f", e.g. -c {_round_up(needed_tokens) * slots} -np {slots}" if needed_tokens else ""
        return (f"start llama-server with more context per slot: -c is shared by the -np slots (each gets -c / -np){example}, "
                "or fewer slots (-np); or ask for shorter input_tokens / output_tokens")
    if facts.kind == "vllm":
        return "start vLLM with a larger --max-model-len (its KV cache must hold it), or ask for shorter input_tokens / output_tokens"
    return "give the server a larger context per sequence, or ask for shorter input_tokens / output_tokens"


def holds(facts: ServerFacts) -> str:
    """What one sequence of this server holds, in words."""
    if facts.kind == "llama.cpp" and facts.slots:
        return (f"a slot of this llama.cpp server holds {facts.context_per_slot_tokens} (-c {facts.context_per_slot_tokens * facts.slots} "
                f"shared by -np {facts.slots} slots)")
    if facts.kind == "vllm":
        return f"this vLLM server's max_model_len is {facts.context_per_slot_tokens}"
    return f"the server's context per sequence is {facts.context_per_slot_tokens}"


def refuse_unfit(facts: ServerFacts, input_tokens: int, output_tokens: int, what: str = "each request") -> None:
    """Raise, before any load, when `input_tokens` + `output_tokens` cannot fit one sequence or the whole KV cache."""
    needed = input_tokens + output_tokens
    if facts.context_per_slot_tokens is not None and needed > facts.context_per_slot_tokens:
        raise HyperloomError(f"{what} needs {needed} tokens (input {input_tokens} + output {output_tokens}) but {holds(facts)}",
                             larger_context_step(facts, needed))
    if facts.kv_cache_tokens is not None and needed > facts.kv_cache_tokens:
        raise HyperloomError(f"{what} needs {needed} tokens (input {input_tokens} + output {output_tokens}) but the server's KV cache "
                             f"holds {facts.kv_cache_tokens}",
                             "give the server more KV cache (vLLM --gpu-memory-utilization), or ask for shorter lengths")


def context_refusal(facts: ServerFacts, error: str, what: str) -> HyperloomError:
    """A server's context-size refusal (HTTP 400 'exceeds the available context size') as that bound, not as a model or API mismatch."""
    per_slot = f"; {holds(facts)}" if facts.context_per_slot_tokens else ""
    return HyperloomError(f"the server refused {what} as longer than its context{per_slot} ({error})", larger_context_step(facts))


def _round_up(tokens: int | None) -> int:
    """A context size a user would type: the next power of two at or above `tokens`."""
    size = 256
    while tokens is not None and size < tokens:
        size *= 2
    return size
