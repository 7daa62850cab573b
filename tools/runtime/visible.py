"""Which GPU a device number names: the N-th GPU this process may use, as the backend's visible-devices variable lists it.

A scheduler (Slurm, a container runtime) or a colleague's shell limits a process to some GPUs with CUDA_VISIBLE_DEVICES
or HIP_VISIBLE_DEVICES. Device N is then the N-th GPU listed there, as torch.cuda.device(N) is, and a worker pinned to
device N gets the variable set to that entry: a bare "N" would name another GPU, someone else's on a shared server.
Without the variable, device N is nvidia-smi's (or amd-smi's) GPU N: workers enumerate CUDA devices in PCI bus order,
as nvidia-smi numbers them, unless CUDA_DEVICE_ORDER says otherwise. The smi tools ignore the variable, so the GPUs
they find idle are mapped back to the numbers this process uses (ordinals).
"""

from __future__ import annotations

from collections.abc import Mapping

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.smi.readings import SmiGpu

VISIBLE_DEVICES = {"cuda": "CUDA_VISIBLE_DEVICES", "hip": "HIP_VISIBLE_DEVICES"}
DEVICE_ORDER = ("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA's default, FASTEST_FIRST, can number GPUs unlike nvidia-smi


def visible_entries(backend: str, environ: Mapping[str, str]) -> list[str] | None:
    """The GPUs the backend's variable lets this process use, in its order; None when it is unset (every GPU).
    As the runtimes read it, the list ends at the first empty or negative entry ('' lists none, '0,-1,1' lists one)."""
    value = environ.get(VISIBLE_DEVICES[backend]) if backend in VISIBLE_DEVICES else None
    if value is None:
        return None
    entries: list[str] = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry or entry.startswith("-"):
            break
        entries.append(entry)
    return entries


def pinned_value(backend: str, device: int, environ: Mapping[str, str]) -> str:
    """What the backend's variable holds in a worker pinned to `device` (a number this process uses)."""
    entries = visible_entries(backend, environ)
    if entries is None:
        if device < 0:
            raise HyperloomError(f"device {device} is not a GPU number", "pass 0 or more (nvidia-smi / amd-smi number the GPUs)")
        return str(device)
    variable = VISIBLE_DEVICES[backend]
    refused = f"device {device} is not a GPU this process may use: {variable}={environ[variable]!r}"
    if not entries:
        raise HyperloomError(f"{refused} lets it use none", f"unset {variable}, or set it to the GPUs this process may use")
    if not 0 <= device < len(entries):
        raise HyperloomError(
            f"{refused} lets it use {len(entries)} ({', '.join(entries)}), numbered 0 to {len(entries) - 1} in that order",
            f"pass a device from 0 to {len(entries) - 1} (the N-th GPU {variable} lists), or run where {variable} lists the GPU you mean",
        )
    return entries[device]


def pinned_environ(environ: Mapping[str, str], backend: str, device: int | None) -> dict[str, str]:
    """`environ` for a worker pinned to `device`: the backend's variable set to that one GPU (never ROCR_VISIBLE_DEVICES:
    it can force a CPU fallback), and CUDA devices in nvidia-smi's order unless the caller chose an order."""
    env = dict(environ)
    if device is None or backend not in VISIBLE_DEVICES:
        return env
    env[VISIBLE_DEVICES[backend]] = pinned_value(backend, device, environ)
    if backend == "cuda":
        env.setdefault(*DEVICE_ORDER)
    return env


def ordinals(backend: str, gpus: list[SmiGpu], environ: Mapping[str, str]) -> list[int]:
    """The numbers this process uses for `gpus` (as an smi tool numbers them), in its order; GPUs it may not use are left
    out. An entry names a GPU by its index or by its UUID (or a prefix of it, as CUDA accepts)."""
    entries = visible_entries(backend, environ)
    if entries is None:
        return sorted(gpu.index for gpu in gpus)
    found = []
    for ordinal, entry in enumerate(entries):
        if any(entry == str(gpu.index) or (gpu.uuid is not None and entry.startswith("GPU-") and gpu.uuid.startswith(entry))
               for gpu in gpus):
            found.append(ordinal)
    return found
