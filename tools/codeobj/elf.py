"""Just enough ELF64 (little-endian) reading for code objects: sections, notes and symbols."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hyperloom.core.errors import HyperloomError

SHT_SYMTAB = 2
SHT_NOTE = 7
SHT_NOBITS = 8
SHF_ALLOC = 0x2
STT_FUNC = 2


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    address: int
    offset: int
    size: int
    link: int
    entsize: int
    flags: int = 0


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    section_index: int
    kind: int  # STT_* from st_info: 1 object, 2 function

    @property
    def is_function(self) -> bool:
        return self.kind == STT_FUNC


def sections(elf: bytes) -> list[Section]:
    try:
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            raise HyperloomError("not a 64-bit little-endian ELF file", "pass an AMDGPU code object")
        shoff = struct.unpack_from("<Q", elf, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
        names_offset = raw[shstrndx][4] if shstrndx < len(raw) else 0
        return [
            Section(_string(elf, names_offset + name), sh_type, address, offset, size, link, entsize, flags)
            for name, sh_type, flags, address, offset, size, link, _, _, entsize in raw
        ]
    except (struct.error, IndexError) as exc:
        raise HyperloomError(f"the ELF section headers are damaged ({exc})", "rebuild the code object") from exc


def _string(elf: bytes, offset: int) -> str:
    end = elf.index(b"\0", offset)
    return elf[offset:end].decode(errors="replace")


def notes(elf: bytes) -> list[tuple[bytes, int, bytes]]:
    """(name, type, descriptor) of every note in the SHT_NOTE sections."""
    found = []
    for section in sections(elf):
        if section.type != SHT_NOTE:
            continue
        cursor, end = section.offset, section.offset + section.size
        while cursor + 12 <= end:
            namesz, descsz, note_type = struct.unpack_from("<III", elf, cursor)
            cursor += 12
            name = elf[cursor : cursor + namesz].rstrip(b"\0")
            cursor += (namesz + 3) & ~3
            found.append((name, note_type, elf[cursor : cursor + descsz]))
            cursor += (descsz + 3) & ~3
    return found


def symbols(elf: bytes) -> list[Symbol]:
    all_sections = sections(elf)
    found = []
    for section in all_sections:
        if section.type != SHT_SYMTAB or not section.entsize:
            continue
        strtab = all_sections[section.link]
        for offset in range(section.offset, section.offset + section.size, section.entsize):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", elf, offset)
            found.append(Symbol(_string(elf, strtab.offset + name) if name else "", value, size, shndx, info & 0xF))
    return found


def symbol_bytes(elf: bytes, symbol: Symbol) -> bytes:
    """The bytes a defined symbol covers in the file."""
    section = sections(elf)[symbol.section_index]
    start = section.offset + (symbol.value - section.address)
    return elf[start : start + symbol.size]


def loaded_contents(elf: bytes) -> list[tuple[str, bytes]]:
    """(name, bytes) of each section the loader maps (code, data, dynamic symbols), notes left out: what a code object
    does, without the file names, build ids and comments that differ between builds of the same code."""
    return [(s.name, elf[s.offset:s.offset + s.size]) for s in sections(elf) if s.flags & SHF_ALLOC
            and s.type not in (SHT_NOTE, SHT_NOBITS)]
