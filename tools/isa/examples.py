"""One example per canonical instruction: a decoded instance that assembles again, with its bytes.

The disassembler is lenient: some decoded operands are impossible (`/*Invalid register…*/`,
wrong image data sizes) and do not re-assemble (toolchain.md 6.7). Each name keeps several
decoded candidates; the first that re-assembles becomes the example and the assembler's bytes
its encoding. A name with none keeps its first candidate, flagged, with the bytes llvm-mc
re-encodes in disassembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from hyperloom.tools.isa.probe import Assembled, assemble_lines
from hyperloom.tools.isa.sweep import Decoded, decode, llvm_mc_runner, split_encoding

MAX_CANDIDATES = 8
SPLIT_ABOVE_LINES = 256


@dataclass(frozen=True)
class Example:
    text: str
    encoding: str
    reassembles: bool


def rank(candidates: Sequence[Decoded]) -> list[Decoded]:
    """Distinct texts, at most MAX_CANDIDATES, those printed without an 'Invalid register' remark first."""
    distinct = list({d.text: d for d in candidates}.values())
    distinct.sort(key=lambda d: "/*Invalid" in d.text)  # stable: plan order within each kind
    return distinct[:MAX_CANDIDATES]


def _assemble(llvm_mc: str, target: str, lines: list[str], pool: Executor | None, shares: int) -> list[Assembled]:
    """assemble_lines, split over `shares` llvm-mc processes side by side when there is a pool."""
    if pool is None or shares < 2 or len(lines) < SPLIT_ABOVE_LINES:
        return assemble_lines(llvm_mc, target, lines)
    size = -(-len(lines) // shares)
    parts = [lines[start : start + size] for start in range(0, len(lines), size)]
    return [result for part in pool.map(lambda p: assemble_lines(llvm_mc, target, p), parts) for result in part]


def choose_examples(
    candidates: dict[str, list[Decoded]], llvm_mc: str, target: str, pool: Executor | None = None, shares: int = 1
) -> dict[str, Example]:
    """name → Example: the first candidates assembled, then the others of the names whose first
    failed, beside a disassembly that gives those names their fallback bytes."""
    names = list(candidates)
    chosen: dict[str, Example] = {}
    first = _assemble(llvm_mc, target, [candidates[n][0].text for n in names], pool, shares)
    for name, result in zip(names, first, strict=True):
        if result.error is None and result.encoding:
            chosen[name] = Example(candidates[name][0].text, result.encoding, True)
    failed = [name for name in names if name not in chosen]
    if not failed:
        return chosen
    fallback_run = llvm_mc_runner(llvm_mc, target, show_encoding=True)
    fallback_groups = [candidates[n][0].group for n in failed]
    fallback = pool.submit(decode, fallback_groups, fallback_run) if pool else None
    retry = [(name, d) for name in failed for d in candidates[name][1:]]
    if retry:
        for (name, decoded), result in zip(retry, assemble_lines(llvm_mc, target, [d.text for _, d in retry]), strict=True):
            if name not in chosen and result.error is None and result.encoding:
                chosen[name] = Example(decoded.text, result.encoding, True)
    decoding = fallback.result() if fallback else decode(fallback_groups, fallback_run)
    for name, lines in zip(failed, decoding.lines, strict=True):
        if name not in chosen:
            chosen[name] = Example(candidates[name][0].text, split_encoding(lines[0])[1] if lines else "", False)
    return chosen
