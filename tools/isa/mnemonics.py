"""The assembler's own mnemonic list, read from the LLVM library that llvm-mc runs.

LLVM's generated AMDGPU AsmMatcher keeps every mnemonic in one sorted run of length-prefixed
(Pascal) strings, from `buffer_atomic_add` to `v_xor_b32` (toolchain.md 6.1). We find one
known entry and walk outwards. `strings` would be lossy here: the length bytes 0x09 and 0x0d are
whitespace and glue neighbours together. When the table is not found (another LLVM layout), the
census falls back to the names its own sweep found.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

ANCHORS = (b"v_swmmac_i32_16x16x64_iu4", b"v_mfma_f32_32x32x8f16", b"v_dot2_f32_f16", b"s_endpgm")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.")
_LOWEST_NAME_BYTE = min(_NAME_BYTES)  # 0x2E: every length byte of a name shorter than 46 is below it
MIN_ENTRIES = 500


@dataclass(frozen=True)
class MnemonicTable:
    names: tuple[str, ...]
    source: str


def _is_name(raw: bytes) -> bool:
    """A mnemonic: lower-case letters, digits, '_' and '.', starting with a letter (never a directive)."""
    return bool(raw) and 0x61 <= raw[0] <= 0x7A and all(b in _NAME_BYTES for b in raw)


def walk_table(data: bytes | mmap.mmap, anchor_at: int) -> list[str]:
    """The sorted run of Pascal strings around the entry whose length byte is at `anchor_at`."""
    forward: list[str] = []
    pos = anchor_at
    while pos < len(data):
        length = data[pos]
        raw = data[pos + 1 : pos + 1 + length]
        if length == 0 or len(raw) != length or not _is_name(raw):
            break
        forward.append(raw.decode())
        pos += 1 + length
    backward: list[str] = []
    start = anchor_at
    while start > 0:
        # The previous entry's length byte is the nearest byte below any name character.
        pos = start - 1
        while pos >= 0 and data[pos] >= _LOWEST_NAME_BYTE:
            pos -= 1
        if pos < 0 or data[pos] == 0 or data[pos] != start - 1 - pos:
            break
        raw = data[pos + 1 : start]
        if not _is_name(raw):
            break
        backward.append(raw.decode())
        start = pos
    names = backward[::-1] + forward
    # Keep the longest sorted stretch that holds the anchor: the table is sorted, its neighbours are not.
    anchor_index = len(backward)
    low = anchor_index
    while low > 0 and names[low - 1] < names[low]:
        low -= 1
    high = anchor_index
    while high + 1 < len(names) and names[high] < names[high + 1]:
        high += 1
    return names[low : high + 1]


def read_table(path: Path) -> list[str] | None:
    """The mnemonic table in one binary, or None when it holds none."""
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for anchor in ANCHORS:
                at = data.find(bytes([len(anchor)]) + anchor)
                while at >= 0:
                    names = walk_table(data, at)
                    if len(names) >= MIN_ENTRIES:
                        return names
                    at = data.find(bytes([len(anchor)]) + anchor, at + 1)
    except (OSError, ValueError):
        return None
    return None


def library_candidates(llvm_mc: Path) -> list[Path]:
    """Where the table may live: llvm-mc itself (static builds), then libLLVM beside its bin folder."""
    real = llvm_mc.resolve()
    found = [real]
    for lib in sorted((real.parent.parent / "lib").glob("libLLVM*.so*")):
        if lib.resolve() not in found:
            found.append(lib.resolve())
    return found


def find_table(llvm_mc: Path) -> MnemonicTable | None:
    for candidate in library_candidates(llvm_mc):
        if names := read_table(candidate):
            return MnemonicTable(tuple(names), candidate.name)
    return None
