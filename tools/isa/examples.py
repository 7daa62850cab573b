"""One example per canonical instruction: a decoded instance that assembles again, with its bytes.

The disassembler is lenient: some decoded operands are impossible (`/*Invalid register…*/`,
wrong image data sizes) and do not re-assemble (toolchain.md 6.7). Each name keeps several
decoded candidates; the first that re-assembles becomes the example and the assembler's bytes
its encoding. A name with none keeps its first candidate, flagged, with the bytes llvm-mc
re-encodes in disassembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hyperloom.tools.isa.probe import assemble_lines
from hyperloom.tools.isa.sweep import Decoded, decode, llvm_mc_runner, split_encoding

MAX_CANDIDATES = 8


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


def choose_examples(candidates: dict[str, list[Decoded]], llvm_mc: str, target: str) -> dict[str, Example]:
    """name → Example, using at most three llvm-mc runs whatever the number of names."""
    names = list(candidates)
    chosen: dict[str, Example] = {}
    first = assemble_lines(llvm_mc, target, [candidates[n][0].text for n in names])
    for name, result in zip(names, first, strict=True):
        if result.error is None and result.encoding:
            chosen[name] = Example(candidates[name][0].text, result.encoding, True)
    retry = [(name, d) for name in names if name not in chosen for d in candidates[name][1:]]
    if retry:
        for (name, decoded), result in zip(retry, assemble_lines(llvm_mc, target, [d.text for _, d in retry]), strict=True):
            if name not in chosen and result.error is None and result.encoding:
                chosen[name] = Example(decoded.text, result.encoding, True)
    failed = [name for name in names if name not in chosen]
    if failed:
        decoding = decode([candidates[n][0].group for n in failed], llvm_mc_runner(llvm_mc, target, show_encoding=True))
        for name, lines in zip(failed, decoding.lines, strict=True):
            encoding = split_encoding(lines[0])[1] if lines else ""
            chosen[name] = Example(candidates[name][0].text, encoding, False)
    return chosen
