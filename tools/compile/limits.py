"""What one workgroup (block) may ask of a target: shared memory (LDS), threads and registers, from the vendors' tables.

AMD: 64 KiB of LDS per workgroup on gfx9 (MI100-MI300) and on RDNA (gfx10-gfx12), 160 KiB on gfx950 (MI350); up to 1024
work-items; 512 VGPRs a lane (with AGPRs). NVIDIA: shared memory per block with the opt-in, by compute capability
(227 KiB on sm_90); 1024 threads; 255 registers a thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyperloom.tools.compile.drivers import AMD_TARGET, NVIDIA_TARGET

NVIDIA_SHARED_BYTES = {"sm_70": 98304, "sm_75": 65536, "sm_80": 166912, "sm_86": 101376, "sm_87": 166912, "sm_89": 101376, "sm_90": 232448,
                       "sm_90a": 232448, "sm_100": 232448, "sm_100a": 232448, "sm_120": 101376}
AMD_LDS_BYTES = {"gfx950": 163840}
AMD_DEFAULT_LDS_BYTES = 65536
THREADS_PER_WORKGROUP = 1024


@dataclass(frozen=True)
class Limits:
    shared_bytes: int
    threads: int
    registers: int
    source: str


def limits_of(target: str) -> Limits | None:
    """The target's per-workgroup limits; None for the host and for names of no known kind."""
    if AMD_TARGET.fullmatch(target):
        return Limits(AMD_LDS_BYTES.get(target, AMD_DEFAULT_LDS_BYTES), THREADS_PER_WORKGROUP, 512, "AMD ISA guide: LDS per workgroup")
    if NVIDIA_TARGET.fullmatch(target):
        shared = NVIDIA_SHARED_BYTES.get(target, NVIDIA_SHARED_BYTES.get(target.rstrip("af"), 232448))
        return Limits(shared, THREADS_PER_WORKGROUP, 255, "CUDA programming guide: shared memory per block (opt-in)")
    return None
