"""Clocks, power and temperature around a benchmark, where the vendor's tool answers."""

from __future__ import annotations

import subprocess

from hyperloom.core.toolchain import find_tool
from hyperloom.tools.smi.amd import rocm_smi_state
from hyperloom.tools.smi.nvidia import STATE_ARGS, nvidia_smi_state
from hyperloom.tools.smi.readings import DeviceState

QUERY_TIMEOUT_S = 5.0


def device_state(backend: str, device: int) -> DeviceState | None:
    """One reading from nvidia-smi (cuda) or rocm-smi (hip); None where no tool applies or answers."""
    if backend == "hip":
        return _rocm_state(device)
    if backend != "cuda":
        return None
    smi = find_tool("nvidia-smi")
    if smi.path is None:
        return None
    try:
        proc = subprocess.run(
            [smi.path, f"--id={device}", *STATE_ARGS],
            capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DeviceState(tool="nvidia-smi", note=f"no reading: {exc}")
    return nvidia_smi_state(proc.returncode, proc.stdout, proc.stderr)


def _rocm_state(device: int) -> DeviceState | None:
    smi = find_tool("rocm-smi")
    if smi.path is None:
        return None
    try:
        proc = subprocess.run(
            [smi.path, "-d", str(device), "--showtemp", "--showclocks", "--showpower"],
            capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DeviceState(tool="rocm-smi", note=f"no reading: {exc}")
    return rocm_smi_state(proc.stdout, device)
