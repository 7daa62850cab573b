"""Which devices the workers run on: CPU workers for the c backend, idle GPUs otherwise."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from typing import TypeVar

from hyperloom.core.toolchain import find_tool
from hyperloom.tools.runtime.models import HOST_BACKENDS
from hyperloom.tools.runtime.visible import ordinals, pinned_value
from hyperloom.tools.smi.amd import IDLE_METRIC_ARGS, parse_idle_metric
from hyperloom.tools.smi.nvidia import IDLE_QUERY_ARGS, parse_idle_query
from hyperloom.tools.smi.readings import SmiGpu

IDLE_UTILIZATION_PCT = 10.0
IDLE_MEMORY_MIB = 2048.0
SMI_TIMEOUT_S = 10.0
T = TypeVar("T")


def worker_slots(backend: str, workers: int, devices: list[int] | None) -> list[int | None]:
    """One slot per worker: `workers` CPU workers (None) on the c backend; elsewhere one per GPU, the ones asked
    for or else every idle one this process may use (its first when none answers), each running one candidate at
    a time. Devices are numbered as this process sees them (tools/runtime/visible.py); one it may not use is refused."""
    if backend in HOST_BACKENDS:
        return [None] * workers
    chosen = list(dict.fromkeys(devices if devices else (idle_gpus(backend) or [0])))
    for device in chosen:
        pinned_value(backend, device, os.environ)  # raises, naming the variable, for a GPU this process may not use
    return chosen


def slot_label(device: int | None) -> str:
    """How the ledger and the report name a slot's device."""
    return "cpu" if device is None else f"gpu {device}"


def idle_gpus(backend: str, environ: Mapping[str, str] | None = None) -> list[int]:
    """GPUs with low utilization and little memory in use, from nvidia-smi or amd-smi, as this process numbers them
    (tools/runtime/visible.py); [] when neither answers, or when ROCR_VISIBLE_DEVICES renumbers AMD GPUs in a way
    amd-smi's numbers cannot be mapped to."""
    environ = os.environ if environ is None else environ
    try:
        if backend == "cuda":
            return ordinals(backend, _idle("nvidia-smi", IDLE_QUERY_ARGS, parse_idle_query), environ)
        if "ROCR_VISIBLE_DEVICES" in environ:
            return []
        return ordinals(backend, [SmiGpu(index) for index in _idle("amd-smi", IDLE_METRIC_ARGS, parse_idle_metric)], environ)
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError, json.JSONDecodeError):
        return []


def _idle(tool: str, args: tuple[str, ...], parse: Callable[[str, float, float], list[T]]) -> list[T]:
    """The idle GPUs in what `tool args` prints; [] when the tool is not installed (a failure raises, for idle_gpus)."""
    smi = find_tool(tool)
    if smi.path is None:
        return []
    proc = subprocess.run([smi.path, *args], capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=True)
    return parse(proc.stdout, IDLE_UTILIZATION_PCT, IDLE_MEMORY_MIB)
