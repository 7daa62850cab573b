"""Which devices the workers run on: CPU workers for the c backend, idle GPUs otherwise."""

from __future__ import annotations

import json
import subprocess

from hyperloom.core.toolchain import find_tool
from hyperloom.tools.runtime.models import HOST_BACKENDS

IDLE_UTILIZATION_PCT = 10.0
IDLE_MEMORY_MIB = 2048.0
SMI_TIMEOUT_S = 10.0


def worker_slots(backend: str, workers: int, devices: list[int] | None) -> list[int | None]:
    """One slot per worker: `workers` CPU workers (None) on the c backend; elsewhere one per GPU, the ones asked
    for or else every idle one (device 0 when none answers), each running one candidate at a time."""
    if backend in HOST_BACKENDS:
        return [None] * workers
    chosen = devices if devices else (idle_gpus(backend) or [0])
    return list(dict.fromkeys(chosen))


def slot_label(device: int | None) -> str:
    """How the ledger and the report name a slot's device."""
    return "cpu" if device is None else f"gpu {device}"


def idle_gpus(backend: str) -> list[int]:
    """GPUs with low utilization and little memory in use, from nvidia-smi or amd-smi; [] when neither answers."""
    try:
        return _nvidia_idle() if backend == "cuda" else _amd_idle()
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError, json.JSONDecodeError):
        return []


def _nvidia_idle() -> list[int]:
    smi = find_tool("nvidia-smi")
    if smi.path is None:
        return []
    proc = subprocess.run([smi.path, "--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=True)
    return parse_nvidia(proc.stdout)


def parse_nvidia(text: str) -> list[int]:
    idle = []
    for line in text.strip().splitlines():
        index, util, memory = (part.strip() for part in line.split(","))
        if float(util) <= IDLE_UTILIZATION_PCT and float(memory) <= IDLE_MEMORY_MIB:
            idle.append(int(index))
    return idle


def _amd_idle() -> list[int]:
    smi = find_tool("amd-smi")
    if smi.path is None:
        return []
    proc = subprocess.run([smi.path, "metric", "--usage", "--mem-usage", "--json"], capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=True)
    return parse_amd(proc.stdout)


def parse_amd(text: str) -> list[int]:
    data = json.loads(text)
    gpus = data["gpu_data"] if isinstance(data, dict) and "gpu_data" in data else data
    idle = []
    for gpu in gpus:
        usage = gpu["usage"]["gfx_activity"]
        memory = gpu["mem_usage"]["used_vram"]
        util = usage["value"] if isinstance(usage, dict) else usage
        used = memory["value"] if isinstance(memory, dict) else memory
        if float(util) <= IDLE_UTILIZATION_PCT and float(used) <= IDLE_MEMORY_MIB:
            idle.append(int(gpu["gpu"]))
    return idle
