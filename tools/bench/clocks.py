"""Clocks, power and temperature around a benchmark, where the vendor's tool answers."""

from __future__ import annotations

import subprocess

from pydantic import BaseModel

from hyperloom.core.toolchain import find_tool

QUERY_TIMEOUT_S = 5.0


class DeviceState(BaseModel):
    tool: str
    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    note: str = ""


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def device_state(backend: str, device: int) -> DeviceState | None:
    """One reading from nvidia-smi (cuda backend); None where no tool applies or answers."""
    if backend != "cuda":
        return None
    smi = find_tool("nvidia-smi")
    if smi.path is None:
        return None
    try:
        proc = subprocess.run(
            [smi.path, f"--id={device}", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DeviceState(tool="nvidia-smi", note=f"no reading: {exc}")
    fields = proc.stdout.strip().splitlines()[0].split(",") if proc.returncode == 0 and proc.stdout.strip() else []
    if len(fields) != 4:
        return DeviceState(tool="nvidia-smi", note=f"no reading: {proc.stderr.strip()[:200] or 'unexpected output'}")
    sm, mem, power, temp = map(_number, fields)
    return DeviceState(tool="nvidia-smi", sm_clock_mhz=sm, memory_clock_mhz=mem, power_w=power, temperature_c=temp)
