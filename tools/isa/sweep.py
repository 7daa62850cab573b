"""The disassembler sweep: every opcode of every encoding family, decoded by llvm-mc (one process
per share of the groups, the shares side by side).

Each candidate group is followed by a sentinel group `s_movk_i32 s100, <index>`; stdout is split
at the sentinels, so every decoded line is attributed to the group that produced it (a group
that fails to decode prints nothing on stdout). llvm-mc can crash on odd encodings and then
loses all buffered output: a crashing run is bisected down to the groups that crash it, which
are dropped and reported (toolchain.md 6.2).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from hyperloom.core.errors import HyperloomError
from hyperloom.core.process import run_checked
from hyperloom.tools.isa.layouts import Family, encode_group
from hyperloom.tools.isa.targets import TRIPLE

SENTINEL_BASE = 0xB0640000  # s_movk_i32 s100, imm16
TIMEOUT_S = 120.0
_SENTINEL = re.compile(r"^\s*s_movk_i32 s100, (0x[0-9a-fA-F]+|-?\d+)\b")
_ENCODING = re.compile(r"\s*;\s*encoding:\s*(\[[^\]]*\])\s*$")


@dataclass(frozen=True)
class Group:
    family: str
    words: tuple[int, ...]


@dataclass(frozen=True)
class Decoded:
    """The first instruction a group decoded to, as llvm-mc prints it, and the group itself."""

    group: Group
    text: str


@dataclass
class SweepOutcome:
    decoded: list[Decoded] = field(default_factory=list)
    groups: int = 0
    crashed_runs: int = 0
    dropped: list[Group] = field(default_factory=list)


def plan(families: Sequence[Family]) -> list[Group]:
    """Every group of every family, in layout order."""
    return [Group(family.name, words) for family in families for words in family.groups()]


def sweep_input(groups: Sequence[Group]) -> str:
    """Disassembler input: each group on its own line, then its sentinel."""
    lines = []
    for index, group in enumerate(groups):
        lines.append(encode_group(group.words))
        lines.append(encode_group((SENTINEL_BASE | (index & 0xFFFF),)))
    lines.append("")
    return "\n".join(lines)


def split_at_sentinels(stdout: str, count: int) -> list[list[str]]:
    """The decoded lines of each of `count` groups, read between consecutive sentinels."""
    segments: list[list[str]] = [[] for _ in range(count)]
    index = 0
    for line in stdout.splitlines():
        if not line.startswith("\t") or line.startswith("\t."):
            continue
        if line.startswith("\ts_movk_i32 s100, ") and (match := _SENTINEL.match(line)):
            value = int(match.group(1), 0) & 0xFFFF
            if index >= count or value != index & 0xFFFF:
                raise HyperloomError(
                    f"llvm-mc's output lost step with its input at sentinel {value} (expected {index & 0xFFFF})",
                    "report this llvm-mc version; the census cannot attribute its output",
                )
            index += 1
            continue
        if index < count:
            segments[index].append(line.strip())
    if index != count:
        raise HyperloomError(
            f"llvm-mc printed {index} of {count} sentinels", "report this llvm-mc version; its disassembler stopped early"
        )
    return segments


def split_encoding(line: str) -> tuple[str, str]:
    """'v_nop ; encoding: [0x00,…]' → ('v_nop', '[0x00,…]'); no encoding → (line, '')."""
    if match := _ENCODING.search(line):
        return line[: match.start()].strip(), match.group(1)
    return line.strip(), ""


Runner = Callable[[str], "str | None"]
"""Disassembles one input text; returns stdout, or None when llvm-mc crashed."""


def llvm_mc_runner(llvm_mc: str, target: str, *, show_encoding: bool = False) -> Runner:
    """Runs llvm-mc's disassembler; with `show_encoding` each line ends with its re-encoded bytes."""
    args = [llvm_mc, "--disassemble", f"-triple={TRIPLE}", f"-mcpu={target}"]
    if show_encoding:
        args.append("--show-encoding")

    def run(text: str) -> str | None:
        proc = run_checked(args, timeout_s=TIMEOUT_S, what=f"the disassembler sweep of {target}", input_text=text, ok_codes=None)
        if proc.returncode < 0 or "Stack dump" in proc.stderr or proc.returncode not in (0, 1):
            return None
        return proc.stdout

    return run


@dataclass
class Decoding:
    """What one (possibly bisected) llvm-mc run yielded: lines per group, and the crash record."""

    lines: list[list[str]]
    crashed_runs: int = 0
    dropped: list[Group] = field(default_factory=list)


def decode(groups: Sequence[Group], run: Runner) -> Decoding:
    """Decode `groups`; a crashing run is split in halves until the crashing groups are found."""
    stdout = run(sweep_input(groups))
    if stdout is not None:
        return Decoding(split_at_sentinels(stdout, len(groups)))
    if len(groups) == 1:
        return Decoding([[]], crashed_runs=1, dropped=[groups[0]])
    middle = len(groups) // 2
    left, right = decode(groups[:middle], run), decode(groups[middle:], run)
    return Decoding(left.lines + right.lines, 1 + left.crashed_runs + right.crashed_runs, left.dropped + right.dropped)


def sweep(groups: Sequence[Group], run: Runner, pool: Executor | None = None, chunks: int = 1) -> SweepOutcome:
    """Decode all groups in `chunks` llvm-mc processes (side by side on `pool`); keep each group's first line."""
    size = -(-len(groups) // max(chunks, 1)) or 1
    parts = [groups[start : start + size] for start in range(0, len(groups), size)]
    decodings = list(pool.map(decode, parts, [run] * len(parts))) if pool else [decode(part, run) for part in parts]
    outcome = SweepOutcome(groups=len(groups))
    for part, decoding in zip(parts, decodings, strict=True):
        outcome.crashed_runs += decoding.crashed_runs
        outcome.dropped.extend(decoding.dropped)
        for group, lines in zip(part, decoding.lines, strict=True):
            if lines:
                outcome.decoded.append(Decoded(group, split_encoding(lines[0])[0]))
    return outcome
