"""The prompts a sweep sends: seeded random words sized to a token count the server confirms, or a JSONL file's."""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

from hyperloom.core.errors import HyperloomError

MAX_PROMPTS = 100_000
T = TypeVar("T")
WORDS = (
    "the of and to in is that it was for on are as with his they at be this from have or by one had not but what all "
    "were when we there can an your which their said if do will each about how up out them then she many some so these "
    "would other into has more her two like him see time could no make than first been its who now people my made over "
    "did down only way find use may water long little very after words called just where most know get through back "
    "much before go good new write our used me man too any day same right look think also around another came come work"
).split()

Measure = Callable[[str], Awaitable[int | None]]
"""Sends one prompt and returns the prompt tokens the server counted (None when it does not say)."""


def synthetic_prompt(words: int, seed: int, index: int) -> str:
    """`words` words: a tag of the request index first, so no two prompts share a cached prefix, then the seed's random
    words, the same for every request, so every prompt has the same length in tokens (not just in words)."""
    tag = f"{index % 10**6:06d}"[::-1]  # six digits, the fastest-changing first: a constant length and no shared leading digits
    rng = random.Random(f"{seed}:body")
    return " ".join([tag, *(rng.choice(WORDS) for _ in range(max(words, 1) - 1))])


async def calibrate_words(input_tokens: int, seed: int, measure: Measure, tries: int = 4,
                          first_words: int | None = None) -> tuple[int, int | None]:
    """Words per prompt whose token count, as `measure` reports it, is closest to `input_tokens`; and that count.

    Starts at `first_words` (default one word per token) and rescales by the measured ratio; a measure that reports
    nothing keeps the first guess (the count is then None). Against the server's tokenizer a guess costs no slot, so
    one word per token is safe; through real requests start small (a word is often several tokens) and grow.
    """
    words = first_words or input_tokens
    best: tuple[int, int] | None = None
    for attempt in range(tries):
        tokens = await measure(synthetic_prompt(words, seed, -1 - attempt))
        if tokens is None or tokens <= 0:
            return words, None
        if best is None or abs(tokens - input_tokens) < abs(best[1] - input_tokens):
            best = (words, tokens)
        if abs(tokens - input_tokens) <= max(1, input_tokens // 50):
            break
        words = max(1, round(words * input_tokens / tokens))
    assert best is not None
    return best


class JsonlKind(NamedTuple):
    """What a JSONL file holds, for the refusals read_jsonl words."""

    what: str  # one record: "prompt", "session"
    file: str  # the file, as a next step names it: "prompts file", "trace"
    too_many: str  # the next step past `limit` records
    empty: str  # the next step for a file with none


def read_jsonl(path: Path, shown: str, parse: Callable[[int, str], T], kind: JsonlKind, limit: int) -> list[T]:
    """parse(line number, line) of every non-blank line of a UTF-8 JSONL file; refused when it is not UTF-8, holds more
    than `limit` records, or none (parse refuses a line itself, with its number)."""
    records: list[T] = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                records.append(parse(number, line))
                if len(records) > limit:
                    raise HyperloomError(f"{shown} has more than {limit} {kind.what}s", kind.too_many)
    except UnicodeDecodeError as exc:
        raise HyperloomError(f"{shown} is not UTF-8 text", f"save the {kind.file} as UTF-8 JSONL") from exc
    if not records:
        raise HyperloomError(f"{shown} holds no {kind.what}", kind.empty)
    return records


PROMPTS = JsonlKind("prompt", "prompts file", "use a smaller file; prompts are reused in turn",
                    'write one {"prompt": "..."} object per line')


def load_prompts(path: Path, shown: str) -> list[str]:
    """The `prompt` of every line of a JSONL file; a line that is not such an object is refused with its number."""

    def prompt(number: int, line: str) -> str:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HyperloomError(f"{shown} line {number} is not JSON ({exc.msg})", 'write one {"prompt": "..."} object per line') from exc
        if not isinstance(entry, dict) or not isinstance(entry.get("prompt"), str) or not entry["prompt"]:
            raise HyperloomError(f"{shown} line {number} has no non-empty \"prompt\" string", 'write one {"prompt": "..."} object per line')
        return entry["prompt"]

    return read_jsonl(path, shown, prompt, PROMPTS, MAX_PROMPTS)
