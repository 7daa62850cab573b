"""A built kernel's resource requests against its target's limits: refused before any device runs it.

The shared memory a launch asks for is the kernel's static LDS (or shared memory) plus the launch's dynamic
shared_bytes; a runtime that accepts more than the device has (ROCm 6 has accepted such a launch) would time a
kernel that cannot be what it claims. The threads of its block must fit the target and the kernel's own
bound (an AMD kernel's max_flat_workgroup_size).
"""

from __future__ import annotations

import math

from hyperloom.tools.compile.limits import limits_of
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.pipeline.launch import Launchable


def resource_refusal(launchable: Launchable, build: TargetBuild) -> str | None:
    """Why the built kernel asks more than `launchable.target` allows (naming the limit), or None."""
    limits = limits_of(launchable.target)
    if limits is None:
        return None
    kernels = [k for k in build.kernels if launchable.symbol in (None, k.name)] or build.kernels
    threads = math.prod(launchable.block)
    for kernel in kernels:
        shared = (kernel.lds_bytes or 0) + launchable.shared_bytes
        if shared > limits.shared_bytes:
            return (f"{kernel.name} asks for {shared} bytes of shared memory (LDS) per workgroup ({kernel.lds_bytes or 0} static + "
                    f"{launchable.shared_bytes} at launch); {launchable.target} allows {limits.shared_bytes} ({limits.source})")
        bound = min(limits.threads, kernel.max_workgroup_size or limits.threads)
        if threads > bound:
            return f"{kernel.name} launches {threads} threads per workgroup; {launchable.target} and the kernel allow {bound}"
        if kernel.vgprs is not None and kernel.vgprs > limits.registers:
            return f"{kernel.name} uses {kernel.vgprs} registers per thread; {launchable.target} allows {limits.registers}"
    return None
