"""Clocks, power and temperature around a benchmark, where the vendor's tool answers."""

from __future__ import annotations

import re
import subprocess

from pydantic import BaseModel

from hyperloom.core.toolchain import find_tool
from hyperloom.tools.detect.smi import parse_rocm_smi

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


_MHZ = re.compile(r"\((\d+(?:\.\d+)?)\s*Mhz\)", re.I)


def rocm_smi_state(text: str, device: int) -> DeviceState:
    """Clocks, temperature and power of one GPU from `rocm-smi` 'GPU[i] : key: value' lines."""
    gpu = parse_rocm_smi(text).gpus.get(device)
    if gpu is None:
        return DeviceState(tool="rocm-smi", note=f"no reading for GPU {device}")

    def clock(key: str) -> float | None:
        match = _MHZ.search(gpu.values.get(key, ""))
        return float(match.group(1)) if match else None

    def first(predicate) -> float | None:
        return next((_number(v.split()[0]) for k, v in gpu.values.items() if predicate(k) and v.split()), None)

    return DeviceState(
        tool="rocm-smi",
        sm_clock_mhz=clock("sclk clock level"),
        memory_clock_mhz=clock("mclk clock level"),
        temperature_c=first(lambda k: k.startswith("Temperature (Sensor edge)") or k == "Temperature"),
        power_w=first(lambda k: "Package Power" in k and not k.startswith("Max")),
    )


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
