"""Disassemble AMDGPU code objects with llvm-objdump into per-symbol listings.

A listing keeps each symbol's text and parses it on demand: counting mnemonics is one regular
expression over the text, so a megabyte of code is histogrammed in tens of milliseconds; the
full per-instruction parse happens only when a caller asks for instructions. Large objects are
disassembled by several llvm-objdump processes at once, each given a share of the symbols.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.process import run_checked
from hyperloom.core.toolchain import ToolInfo, require_tool
from hyperloom.tools.codeobj.elf import symbols as elf_symbols
from hyperloom.tools.codeobj.formats import Kind, Member, read_members
from hyperloom.tools.codeobj.metadata import read_metadata

TIMEOUT_S = 120.0
SPLIT_ABOVE_BYTES = 256 * 1024
# Every instruction line is "\n\t<mnemonic> …"; blocks keep their leading newline so the first
# line matches too. (Three times faster than a ^-anchored MULTILINE pattern on megabytes of text.)
_MNEMONIC = re.compile(r"\n\t([^ \n]+)")
_PADDING = frozenset({"s_nop", "s_code_end"})
_MACH = re.compile(r"EF_AMDGPU_MACH_AMDGCN_(GFX[0-9A-Z]+)")
_SUFFIXES = ("_e64_dpp", "_e32", "_e64", "_dpp", "_sdwa")


@dataclass(frozen=True)
class Instruction:
    mnemonic: str
    operands: str
    address: int
    encoding: str

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()


def parse_line(line: str) -> Instruction | None:
    """`\\tv_dot8_i32_iu4 v1, v1, v2, v3  // 000000001848: CC184001 7C0E0501` → Instruction."""
    if not line[:1].isspace():
        return None
    text, _, comment = line.partition("//")
    parts = text.split(None, 1)
    if not parts:
        return None
    address, _, encoding = comment.partition(":")
    try:
        where = int(address.strip() or "0", 16)
    except ValueError:
        where = 0
    return Instruction(parts[0], parts[1].strip() if len(parts) > 1 else "", where, encoding.strip())


@dataclass
class Listing:
    """The disassembly of one code object: its target and each symbol's text."""

    target: str
    texts: dict[str, str] = field(default_factory=dict)
    tool: ToolInfo | None = None

    @cached_property
    def symbols(self) -> dict[str, list[Instruction]]:
        """Every symbol's instructions, fully parsed (slower than `counts`)."""
        return {name: [i for i in map(parse_line, text.splitlines()) if i] for name, text in self.texts.items()}

    def counts(self, symbol: str) -> Counter[str]:
        """How often each full mnemonic occurs in `symbol`."""
        return Counter(_MNEMONIC.findall(self.texts.get(symbol, "")))

    def find(self, symbol: str, mnemonics: set[str], keep: int) -> list[Instruction]:
        """The first `keep` instructions of `symbol` whose mnemonic is in `mnemonics`."""
        found: list[Instruction] = []
        for line in self.texts.get(symbol, "").splitlines():
            if len(found) >= keep:
                break
            ins = parse_line(line)
            if ins is not None and ins.mnemonic in mnemonics:
                found.append(ins)
        return found


def base_mnemonic(mnemonic: str) -> str:
    """Strip encoding suffixes (_e32, _e64, _dpp, _sdwa) that name forms of one instruction."""
    for suffix in _SUFFIXES:
        if mnemonic.endswith(suffix):
            return mnemonic[: -len(suffix)]
    return mnemonic


def split_objdump(text: str) -> dict[str, str]:
    """Each symbol's block of `llvm-objdump -d` text (from its `<name>:` header line), without the
    padding after its last `s_endpgm` (`s_nop`, `s_code_end`); every block starts with a newline."""
    headers: list[tuple[str, int, int]] = []  # (name, start of the header line, end of it)
    cursor = 0
    while (colon := text.find(">:\n", cursor)) >= 0:
        line_start = text.rfind("\n", 0, colon) + 1
        opening = text.find(" <", line_start, colon)
        if opening > line_start and text[line_start:opening].strip().isalnum():
            headers.append((text[opening + 2 : colon], line_start, colon + 2))
        cursor = colon + 3
    blocks = {}
    for (name, _, body_start), following in zip(headers, headers[1:] + [("", len(text), len(text))]):
        block = text[body_start : following[1]]
        last = block.rfind("\ts_endpgm")
        if last >= 0:
            end_of_line = block.find("\n", last)
            if end_of_line >= 0 and set(_MNEMONIC.findall(block, end_of_line)) <= _PADDING:
                block = block[:end_of_line]
        blocks[name] = "\n" + block.strip("\n") + "\n"
    return blocks


def amdgpu_target(readobj_text: str) -> str:
    """The gfx target named by the ELF header flags, e.g. 'gfx1201'."""
    match = _MACH.search(readobj_text)
    if not match:
        raise HyperloomError("the code object's ELF flags name no AMDGPU target", "recompile it with --offload-arch=<gfx target>")
    return match.group(1).lower()


def metadata_target(elf: bytes) -> str | None:
    """The gfx target from the metadata note ('amdgcn-amd-amdhsa--gfx90a:xnack-' → 'gfx90a')."""
    try:
        triple = read_metadata(elf).get("amdhsa.target", "")
    except HyperloomError:
        return None
    return triple.rsplit("-", 1)[-1].split(":")[0] or None


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


def _symbol_shares(elf: bytes, parts: int) -> list[list[str]]:
    """Function symbols dealt into `parts` shares of similar total size."""
    functions = sorted((s for s in elf_symbols(elf) if s.is_function and s.size), key=lambda s: -s.size)
    shares: list[list[str]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for symbol in functions:
        lightest = loads.index(min(loads))
        shares[lightest].append(symbol.name)
        loads[lightest] += symbol.size
    return [share for share in shares if share]


def disassemble_member(member: Member, label: str, path: Path | None = None) -> Listing:
    if member.kind is not Kind.AMDGPU:
        raise HyperloomError(f"{label} is an NVIDIA cubin", "disassemble cubins with disasm_verify, which uses cuobjdump")
    objdump = require_tool("llvm-objdump")
    parts = min(os.cpu_count() or 1, 8) if len(member.data) > SPLIT_ABOVE_BYTES else 1
    shares = _symbol_shares(member.data, parts) if parts > 1 else []
    with _on_disk(member, path) as file:
        selections = [[f"--disassemble-symbols={','.join(share)}"] for share in shares] if len(shares) > 1 else [[]]
        outputs = _objdump_all([[objdump.path, "-d", *extra, file] for extra in selections], label)
        target = metadata_target(member.data)
        if target is None:  # no metadata note (e.g. bare assembly): read the ELF header flags
            readobj = require_tool("llvm-readobj")
            header = run_checked([readobj.path, "--file-headers", file], timeout_s=TIMEOUT_S, what=f"reading {label}'s ELF header")
            target = amdgpu_target(header.stdout)
    texts: dict[str, str] = {}
    for output in outputs:
        texts.update(split_objdump(output))
    return Listing(target=target, texts=texts, tool=objdump)


def _objdump_all(commands: list[list[str]], label: str) -> list[str]:
    """Run the llvm-objdump processes side by side, each writing to a file: reading large outputs
    through pipes in Python threads costs as much as the disassembly itself."""
    with ExitStack() as stack:
        outputs = [stack.enter_context(tempfile.TemporaryFile()) for _ in commands]
        errors = [stack.enter_context(tempfile.TemporaryFile()) for _ in commands]
        procs = [subprocess.Popen(cmd, stdout=out, stderr=err) for cmd, out, err in zip(commands, outputs, errors)]
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            for proc in procs:
                proc.kill()

        # a watchdog, not wait(timeout): that polls with sleeps of up to 50 ms, which a 0.3 s disassembly waited out
        watchdog = threading.Timer(TIMEOUT_S, stop)
        watchdog.start()
        try:
            for proc in procs:
                proc.wait()
        finally:
            watchdog.cancel()
        if expired.is_set():
            raise HyperloomError(f"disassembling {label} did not finish within {TIMEOUT_S:g} s", "check the code object")
        texts = []
        for proc, out, err in zip(procs, outputs, errors):
            err.seek(0)
            if proc.returncode != 0:
                message = err.read().decode(errors="replace").strip()[-400:] or "no message"
                raise HyperloomError(f"llvm-objdump failed on {label} (exit code {proc.returncode}): {message}",
                                     "check that it is an AMDGPU code object")
            out.seek(0)
            texts.append(out.read().decode(errors="replace"))
    return texts


def disassemble(path: Path, label: str) -> list[Listing]:
    """One listing per AMDGPU code object in the file (a bundle may hold several)."""
    return [disassemble_member(m, label, path) for m in read_members(path, label)]
