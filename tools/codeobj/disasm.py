"""Disassemble AMDGPU code objects with llvm-objdump into per-symbol instruction lists."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.process import run_checked
from hyperloom.core.toolchain import ToolInfo, require_tool
from hyperloom.tools.codeobj.formats import Kind, Member, read_members
from hyperloom.tools.codeobj.metadata import read_metadata

TIMEOUT_S = 60.0
_SYMBOL = re.compile(r"^([0-9a-fA-F]+) <(.+)>:$")
_INSTRUCTION = re.compile(r"^\s+([a-z_][a-z0-9_.]*)\s*(.*?)\s*(?://\s*([0-9A-Fa-f]+):\s*([0-9A-Fa-f ]+))?$")
_MACH = re.compile(r"EF_AMDGPU_MACH_AMDGCN_(GFX[0-9A-Z]+)")
_PADDING = frozenset({"s_nop", "s_code_end"})
_SUFFIXES = ("_e32", "_e64", "_dpp", "_sdwa", "_e64_dpp")


@dataclass(frozen=True)
class Instruction:
    mnemonic: str
    operands: str
    address: int
    encoding: str

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()


@dataclass
class Listing:
    """The disassembly of one code object: its target and each symbol's instructions."""

    target: str
    symbols: dict[str, list[Instruction]] = field(default_factory=dict)
    tool: ToolInfo | None = None


def base_mnemonic(mnemonic: str) -> str:
    """Strip encoding suffixes (_e32, _e64, _dpp, _sdwa) that name forms of one instruction."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if mnemonic.endswith(suffix):
            return mnemonic[: -len(suffix)]
    return mnemonic


def parse_objdump(text: str) -> dict[str, list[Instruction]]:
    """Symbols and their instructions from `llvm-objdump -d` text; the padding after the last
    `s_endpgm` (`s_nop`, `s_code_end`) is dropped."""
    symbols: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        if match := _SYMBOL.match(line):
            current = symbols.setdefault(match.group(2), [])
            continue
        if current is None or not line.startswith(("\t", " ")):
            continue
        if match := _INSTRUCTION.match(line):
            mnemonic, operands, address, encoding = match.groups()
            current.append(Instruction(mnemonic, operands, int(address or "0", 16), (encoding or "").strip()))
    for name, instructions in symbols.items():
        ends = [i for i, ins in enumerate(instructions) if ins.mnemonic == "s_endpgm"]
        if ends and all(ins.mnemonic in _PADDING for ins in instructions[ends[-1] + 1 :]):
            symbols[name] = instructions[: ends[-1] + 1]
    return symbols


def amdgpu_target(readobj_text: str) -> str:
    """The gfx target named by the ELF header flags, e.g. 'gfx1201'."""
    match = _MACH.search(readobj_text)
    if not match:
        raise HyperloomError("the code object's ELF flags name no AMDGPU target", "recompile it with --offload-arch=<gfx target>")
    return match.group(1).lower()


@contextmanager
def _on_disk(member: Member, path: Path | None) -> Iterator[str]:
    """A path holding the member's bytes: the original file, or a temporary copy of a bundle entry."""
    if path is not None and member.bundle_triple is None:
        yield str(path)
        return
    with tempfile.NamedTemporaryFile(suffix=".co") as handle:
        handle.write(member.data)
        handle.flush()
        yield handle.name


def disassemble_member(member: Member, label: str, path: Path | None = None) -> Listing:
    if member.kind is not Kind.AMDGPU:
        raise HyperloomError(f"{label} is an NVIDIA cubin", "disassemble cubins with disasm_verify, which uses cuobjdump or nvdisasm")
    objdump = require_tool("llvm-objdump")
    with _on_disk(member, path) as file:
        listing = run_checked([objdump.path, "-d", file], timeout_s=TIMEOUT_S, what=f"disassembling {label} with llvm-objdump")
        target = metadata_target(member.data)
        if target is None:  # no metadata note (e.g. bare assembly): read the ELF header flags
            readobj = require_tool("llvm-readobj")
            header = run_checked([readobj.path, "--file-headers", file], timeout_s=TIMEOUT_S, what=f"reading {label}'s ELF header")
            target = amdgpu_target(header.stdout)
    return Listing(target=target, symbols=parse_objdump(listing.stdout), tool=objdump)


def metadata_target(elf: bytes) -> str | None:
    """The gfx target from the metadata note ('amdgcn-amd-amdhsa--gfx90a:xnack-' → 'gfx90a')."""
    try:
        triple = read_metadata(elf).get("amdhsa.target", "")
    except HyperloomError:
        return None
    return triple.rsplit("-", 1)[-1].split(":")[0] or None


def disassemble(path: Path, label: str) -> list[Listing]:
    """One listing per AMDGPU code object in the file (a bundle may hold several)."""
    return [disassemble_member(m, label, path) for m in read_members(path, label)]
