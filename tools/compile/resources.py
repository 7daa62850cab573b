"""Per-kernel resource reports: AMD from the metadata note plus clang's remarks, NVIDIA from ptxas -v."""

from __future__ import annotations

import re

from hyperloom.tools.codeobj.metadata import kernel_resources
from hyperloom.tools.compile.diagnostics import parse_remarks
from hyperloom.tools.compile.models import KernelReport

_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_FRAME = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) "
                          r"bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")


def amd_kernels(code_object: bytes, compiler_log: str) -> list[KernelReport]:
    remarks = parse_remarks(compiler_log)
    reports = []
    for k in kernel_resources(code_object):
        occupancy = remarks.get(k.name, {}).get("Occupancy [waves/SIMD]")
        reports.append(
            KernelReport(
                name=k.name, vgprs=k.vgprs, agprs=k.agprs, sgprs=k.sgprs, vgpr_spills=k.vgpr_spills,
                sgpr_spills=k.sgpr_spills, lds_bytes=k.lds_bytes, scratch_bytes=k.scratch_bytes,
                wavefront_size=k.wavefront_size, max_workgroup_size=k.max_workgroup_size,
                occupancy_waves_per_simd=int(occupancy) if occupancy and occupancy.isdigit() else None,
            )
        )
    return reports


def nvidia_kernels(ptxas_log: str) -> list[KernelReport]:
    """Kernels from `ptxas -v`: registers, spill stores (bytes), shared memory and stack."""
    frames = {m[1]: (int(m[2]), int(m[3])) for m in _PTXAS_FRAME.finditer(ptxas_log)}
    reports = []
    for block in re.split(r"(?=ptxas info\s+: Compiling entry function)", ptxas_log):
        entry = _PTXAS_ENTRY.search(block)
        used = _PTXAS_USED.search(block)
        if not entry or not used:
            continue
        stack, spills = frames.get(entry[1], (None, None))
        reports.append(
            KernelReport(
                name=entry[1], vgprs=int(used[1]), vgpr_spills=spills, lds_bytes=int(used[2] or 0),
                scratch_bytes=stack, wavefront_size=32,
            )
        )
    return reports
