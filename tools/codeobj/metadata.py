"""Per-kernel resource usage from a code object's NT_AMDGPU_METADATA note.

The note is msgpack inside an ELF SHT_NOTE section; reading it in-process costs microseconds,
where `llvm-readelf --notes` costs a process start (~20 ms). Tests cross-check both readings.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
from pydantic import BaseModel, Field

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.codeobj.elf import notes, symbol_bytes, symbols

NT_AMDGPU_METADATA = 32
KERNEL_DESCRIPTOR_BYTES = 64


class KernelResources(BaseModel):
    """What the compiler recorded for one kernel (read from the code object)."""

    name: str
    vgprs: int | None = Field(description="Architected VGPRs per lane (null without a metadata note).")
    agprs: int | None = Field(default=None, description="Accumulation VGPRs (gfx90a/gfx942), when recorded.")
    sgprs: int | None
    vgpr_spills: int | None
    sgpr_spills: int | None
    lds_bytes: int = Field(description="Static LDS (group segment) per workgroup.")
    scratch_bytes: int = Field(description="Private segment (scratch) per lane.")
    wavefront_size: int | None
    max_workgroup_size: int | None
    kernarg_bytes: int
    dynamic_stack: bool | None


def read_metadata(elf: bytes) -> dict[str, Any]:
    """The decoded AMDGPU metadata map (keys like 'amdhsa.kernels', 'amdhsa.target')."""
    try:
        for name, note_type, desc in notes(elf):
            if name == b"AMDGPU" and note_type == NT_AMDGPU_METADATA:
                return msgpack.unpackb(desc, raw=False, strict_map_key=False)
    except (struct.error, IndexError, ValueError, msgpack.ExtraData) as exc:
        raise HyperloomError(f"the code object's note sections are damaged ({exc})", "rebuild the code object") from exc
    raise HyperloomError("the code object carries no AMDGPU metadata note", "compile it with clang or hipcc for an amdgcn target")


def kernel_resources(elf: bytes) -> list[KernelResources]:
    """Every kernel's recorded resources: from the metadata note, else from the kernel descriptors
    (hand-written assembly often has no note; then only LDS, scratch and kernarg sizes are known)."""
    try:
        metadata = read_metadata(elf)
    except HyperloomError:
        return _from_descriptors(elf)
    return [
        KernelResources(
            name=k[".name"],
            vgprs=k.get(".vgpr_count", 0),
            agprs=k.get(".agpr_count"),
            sgprs=k.get(".sgpr_count", 0),
            vgpr_spills=k.get(".vgpr_spill_count", 0),
            sgpr_spills=k.get(".sgpr_spill_count", 0),
            lds_bytes=k.get(".group_segment_fixed_size", 0),
            scratch_bytes=k.get(".private_segment_fixed_size", 0),
            wavefront_size=k.get(".wavefront_size", 64),
            max_workgroup_size=k.get(".max_flat_workgroup_size", 0),
            kernarg_bytes=k.get(".kernarg_segment_size", 0),
            dynamic_stack=bool(k.get(".uses_dynamic_stack", False)),
        )
        for k in metadata.get("amdhsa.kernels", [])
    ]


def _from_descriptors(elf: bytes) -> list[KernelResources]:
    kernels = []
    for symbol in symbols(elf):
        if not symbol.name.endswith(".kd") or symbol.size < KERNEL_DESCRIPTOR_BYTES:
            continue
        lds, scratch, kernarg = struct.unpack_from("<III", symbol_bytes(elf, symbol))
        kernels.append(
            KernelResources(
                name=symbol.name[: -len(".kd")], vgprs=None, sgprs=None, vgpr_spills=None, sgpr_spills=None,
                lds_bytes=lds, scratch_bytes=scratch, wavefront_size=None, max_workgroup_size=None,
                kernarg_bytes=kernarg, dynamic_stack=None,
            )
        )
    if not kernels:
        raise HyperloomError("the code object has neither a metadata note nor kernel descriptors",
                             "compile it for an amdgcn target with clang, hipcc or llvm-mc")
    return kernels
