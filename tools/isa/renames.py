"""Which canonical names of two targets spell one operation, by what the assembler accepts.

LLVM renamed many instructions for gfx11 and gfx12 (buffer_load_dword became buffer_load_b32) and kept
the old names as aliases there. A name only one target has is a rename when the other target's
assembler takes it and prints one of the other's own names: first the name's example from its own
census assembled on the other target; when those operands do not suit it (buffer soffset, wave size),
the other target's examples of its same-prefix names with the mnemonic swapped for this one.
"""

from __future__ import annotations

import json

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.hashing import sha256_json
from hyperloom.tools.codeobj.disasm import base_mnemonic
from hyperloom.tools.isa.models import Census
from hyperloom.tools.isa.probe import assemble_lines

Rename = tuple[str, str]  # (name on the target, name on the other target)
FORMAT = "hyperloom.isa_renames/1"


def _printed_name(printed: str | None) -> str | None:
    if not printed or " :: " in printed:
        return None
    return base_mnemonic(printed.split(maxsplit=1)[0])


def _prefix(name: str) -> str:
    return name.split("_", 1)[0]


def one_way(source: Census, other: Census, llvm_mc: str) -> dict[str, str]:
    """Names only `source` has → the name `other` prints for them, when `other` takes them as aliases."""
    mine, theirs = source.names("canonical"), other.names("canonical")
    only_theirs = theirs - mine
    candidates = sorted(n for n in mine - theirs if n in other.names("alias"))
    examples = {i.name: i.example for i in source.instructions if i.kind == "canonical" and i.example}
    theirs_examples = {i.name: i.example for i in other.instructions if i.kind == "canonical" and i.example and " :: " not in i.example}
    found: dict[str, str] = {}
    direct = [n for n in candidates if n in examples and " :: " not in examples[n]]
    for name, result in zip(direct, assemble_lines(llvm_mc, other.target, [examples[n] for n in direct]), strict=True):
        if (printed := _printed_name(result.printed)) in only_theirs:
            found[name] = printed
    swaps = [
        (name, target_name)
        for name in candidates
        if name not in found
        for target_name in sorted(only_theirs)
        if _prefix(target_name) == _prefix(name) and target_name in theirs_examples
    ]
    lines = [name + theirs_examples[target_name][len(target_name):] for name, target_name in swaps]
    for (name, target_name), result in zip(swaps, assemble_lines(llvm_mc, other.target, lines) if lines else [], strict=True):
        if name not in found and _printed_name(result.printed) == target_name:
            found[name] = target_name
    return found


def renames(target: Census, other: Census, llvm_mc: str) -> list[Rename]:
    """(name on `target`, name on `other`) for each operation the two spell differently, either way round; kept in
    the census cache, keyed by both censuses (each names its llvm-mc and definitions) and this module's format."""
    path = cache_dir("isa") / f"renames-{sha256_json([FORMAT, target.evidence.inputs_sha256, other.evidence.inputs_sha256])[:32]}.json"
    try:
        return [(a, b) for a, b in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        pass  # absent or unreadable: measure again
    forward = one_way(target, other, llvm_mc)
    backward = one_way(other, target, llvm_mc)
    found = sorted(set(forward.items()) | {(mine, theirs) for theirs, mine in backward.items()})
    write_bytes_atomic(path, json.dumps(found).encode())
    return found
