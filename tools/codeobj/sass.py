"""NVIDIA cubins: SASS listings and resource usage through cuobjdump (CUDA toolkit)."""

from __future__ import annotations

import re
from pathlib import Path

from hyperloom.core.process import run_checked
from hyperloom.core.toolchain import require_tool
from hyperloom.tools.codeobj.disasm import Listing

TIMEOUT_S = 60.0
_ARCH = re.compile(r"code for (sm_\w+)")
_FUNCTION = re.compile(r"^\s*Function : (\S+)")
_SASS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_RES_FUNCTION = re.compile(r"^\s*Function (\S+):\s*$")
_RES_FIELDS = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")


def sass_base(opcode: str) -> str:
    """'IDP.4A.S8.S8' → 'IDP': the opcode without its modifiers."""
    return opcode.split(".", 1)[0]


def parse_sass(text: str) -> Listing:
    """Functions and instructions from `cuobjdump -sass` text (one architecture), normalised to
    the listing's line form (`\tOPCODE operands // address:`)."""
    arch = _ARCH.search(text)
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if match := _FUNCTION.match(line):
            current = blocks.setdefault(match.group(1), [])
        elif current is not None and (match := _SASS.search(line)):
            address, opcode, operands = match.groups()
            current.append(f"\t{opcode} {operands.strip()} // {address}:")
    return Listing(target=arch.group(1) if arch else "sm_unknown",
                   texts={name: "\n" + "\n".join(lines) + "\n" for name, lines in blocks.items()})


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """`cuobjdump -res-usage`: {'add': {'REG': 10, 'STACK': 0, 'SHARED': 512, 'LOCAL': 0}}."""
    usage: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if match := _RES_FUNCTION.match(line):
            current = usage.setdefault(match.group(1), {})
        elif current is not None and (fields := _RES_FIELDS.findall(line)):
            current.update({name: int(value) for name, value in fields})
    return usage


def disassemble_cubin(path: Path, label: str) -> tuple[Listing, dict[str, dict[str, int]]]:
    cuobjdump = require_tool("cuobjdump")
    sass = run_checked([cuobjdump.path, "-sass", path], timeout_s=TIMEOUT_S, what=f"disassembling {label} with cuobjdump")
    usage = run_checked([cuobjdump.path, "-res-usage", path], timeout_s=TIMEOUT_S, what=f"reading {label}'s resource usage")
    listing = parse_sass(sass.stdout)
    listing.tool = cuobjdump
    return listing, parse_resource_usage(usage.stdout)
