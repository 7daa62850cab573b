"""Recognise code-object files: AMDGPU ELF, NVIDIA cubin, clang offload bundles."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from hyperloom.core.errors import HyperloomError

ELF_MAGIC = b"\x7fELF"
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_BUNDLE_MAGIC = b"CCOB"
EM_CUDA = 190
EM_AMDGPU = 224


class Kind(str, Enum):
    AMDGPU = "amdgpu"
    CUBIN = "cubin"


@dataclass(frozen=True)
class Member:
    """One device code object: the whole file, or one entry of an offload bundle."""

    kind: Kind
    data: bytes
    bundle_triple: str | None = None


def _elf_kind(data: bytes, label: str) -> Kind:
    if len(data) < 20:
        raise HyperloomError(f"{label} is too short to be an ELF code object", "pass a .hsaco, .co, .cubin or offload bundle")
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine == EM_AMDGPU:
        return Kind.AMDGPU
    if machine == EM_CUDA:
        return Kind.CUBIN
    raise HyperloomError(
        f"{label} is an ELF file for machine {machine}, not a GPU code object",
        "pass the device code object (clang --cuda-device-only --no-gpu-bundle-output, or nvcc -cubin)",
    )


def _bundle_members(data: bytes, label: str) -> list[Member]:
    """Entries of an uncompressed clang offload bundle that hold device ELF code."""
    try:
        (count,) = struct.unpack_from("<Q", data, len(BUNDLE_MAGIC))
        cursor, members = len(BUNDLE_MAGIC) + 8, []
        for _ in range(count):
            offset, size, triple_len = struct.unpack_from("<QQQ", data, cursor)
            cursor += 24
            triple = data[cursor : cursor + triple_len].decode()
            cursor += triple_len
            blob = data[offset : offset + size]
            if blob.startswith(ELF_MAGIC) and "amdgcn" in triple:
                members.append(Member(_elf_kind(blob, f"{label} [{triple}]"), blob, triple))
    except (struct.error, UnicodeDecodeError) as exc:
        raise HyperloomError(f"{label} has a damaged offload-bundle header ({exc})", "rebuild the file") from exc
    if not members:
        raise HyperloomError(f"{label} is an offload bundle with no AMDGPU code object", "compile with --offload-arch=<gfx target>")
    return members


def read_members(path: Path, label: str) -> list[Member]:
    """The device code objects in `path`, or an error saying what the file is instead."""
    data = path.read_bytes()
    if data.startswith(ELF_MAGIC):
        return [Member(_elf_kind(data, label), data)]
    if data.startswith(BUNDLE_MAGIC):
        return _bundle_members(data, label)
    if data.startswith(COMPRESSED_BUNDLE_MAGIC):
        raise HyperloomError(
            f"{label} is a compressed offload bundle",
            "unbundle it first: clang-offload-bundler -unbundle -type=o -input=FILE -targets=hipv4-amdgcn-amd-amdhsa--<gfx> "
            "-output=k.hsaco",
        )
    raise HyperloomError(
        f"{label} is not a code object (no ELF or offload-bundle header)",
        "pass a .hsaco/.co file from clang, hipcc or Triton, or a .cubin from nvcc",
    )
