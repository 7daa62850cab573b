"""Numbered things in a line: GPUs or nodes that share a value are named once, as spans ('GPU 0-7: perf auto').

A machine of 64 GPU partitions then reads in one line per kind instead of 64 entries (detect's answer goes into
a model's context on every call)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def spans(numbers: Iterable[int]) -> str:
    """'0-3, 5, 7-9' for 0, 1, 2, 3, 5, 7, 8, 9 (sorted; repeats once)."""
    ordered = sorted(set(numbers))
    runs: list[list[int]] = []
    for number in ordered:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def by_value(values: Mapping[int, str], noun: str, plural: str | None = None) -> str:
    """'GPU 0-6: auto; GPU 7: manual': the numbers sharing each value, values in the order of their first number
    (`plural` names a span of more than one)."""
    shared: dict[str, list[int]] = {}
    for number in sorted(values):
        shared.setdefault(values[number], []).append(number)
    return "; ".join(f"{plural if plural and len(numbers) > 1 else noun} {spans(numbers)}: {value}" for value, numbers in shared.items())


def counted(kinds: Iterable[str]) -> str:
    """'8x AMD Instinct MI300X (gfx942), NVIDIA H200 (sm_90)': each kind once, with its count when more than one."""
    return ", ".join(kind if count == 1 else f"{count}x {kind}" for kind, count in Counter(kinds).items())
