"""AMD's management tools read: `rocm-smi -a` (and its clock, power and temperature lines), the `amd-smi` default
view, and `amd-smi metric`'s JSON of each GPU's use."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from hyperloom.tools.smi.readings import DeviceState, GpuProcess, SmiGpu, SmiReport, number

IDLE_METRIC_ARGS = ("metric", "--usage", "--mem-usage", "--json")
_GPU_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.+?):\s*(.*)$")
_USING = re.compile(r"^PID (\d+) is using (\d+) DRM device\(s\)")
_AMDSMI_HEADER = re.compile(r"amdgpu version:\s*(\S+).*?ROCm version:\s*(\S+)")
_AMDSMI_ROW1 = re.compile(r"^\|\s*([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+(.*?)\s*\|.*?(\d+)/(\d+) W\s*\|")
_AMDSMI_ROW2 = re.compile(r"^\|\s*(\d+)\s+(\S+)\s+.*\|.*?(\d+)/(\d+) MB\s*\|")
_MHZ = re.compile(r"\((\d+(?:\.\d+)?)\s*Mhz\)", re.I)


def _float(text: str | None) -> float | None:
    try:
        return float((text or "").split()[0])
    except (ValueError, IndexError):
        return None


def parse_rocm_smi(text: str) -> SmiReport:
    """`rocm-smi -a`: 'GPU[i]<tab>: Key: value' lines, the driver version, and the KFD process table."""
    report = SmiReport("rocm-smi")
    rows: list[tuple[int, str, int | None]] = []
    using: dict[int, list[int]] = {}
    lines = [line.rstrip() for line in text.splitlines()]
    in_kfd = False
    for at, line in enumerate(lines):
        if line.startswith("Driver version:"):
            report.driver_version = line.split(":", 1)[1].strip() or None
        elif match := _GPU_LINE.match(line):
            gpu = report.gpus.setdefault(int(match.group(1)), SmiGpu(int(match.group(1))))
            gpu.values.setdefault(match.group(2).strip(), match.group(3).strip())
        elif "KFD Processes" in line:
            report.processes_listed = True
        elif line.startswith("PID") and "PROCESS NAME" in line:
            in_kfd = True
        elif in_kfd and (parts := line.split()) and parts[0].isdigit() and len(parts) >= 4:
            rows.append((int(parts[0]), parts[1], int(parts[3]) if parts[3].isdigit() else None))
        elif match := _USING.match(line):
            in_kfd = False
            follow = lines[at + 1].split() if at + 1 < len(lines) else []
            count = int(match.group(2))
            using[int(match.group(1))] = [int(x) for x in follow[:count] if x.isdigit()] if count else []
        elif line.startswith("=") and in_kfd and "KFD" not in line:
            in_kfd = False
    report.gpus = {
        index: replace(gpu, bus_id=gpu.values.get("PCI Bus"), power_cap_w=_float(gpu.values.get("Max Graphics Package Power (W)")))
        for index, gpu in report.gpus.items()
    }
    report.processes = [GpuProcess(pid, name, tuple(using.get(pid, [])), vram) for pid, name, vram in rows]
    return report


def parse_amd_smi(text: str) -> SmiReport:
    """The `amd-smi` default view: version header, then two table rows per GPU."""
    report = SmiReport("amd-smi")
    if header := _AMDSMI_HEADER.search(text):
        report.driver_version, report.rocm_version = header.group(1), header.group(2)
    report.warnings = [line.strip() for line in text.splitlines() if line.strip().startswith("WARNING")]
    pending: tuple[str, str, float] | None = None
    for line in text.splitlines():
        if match := _AMDSMI_ROW1.match(line):
            pending = (match.group(1).lower(), match.group(2).strip(), float(match.group(4)))
        elif pending and (match := _AMDSMI_ROW2.match(line)):
            index = int(match.group(1))
            report.gpus[index] = SmiGpu(
                index, bus_id=pending[0], name=pending[1], power_cap_w=pending[2],
                vram_used_mb=int(match.group(3)), vram_total_mb=int(match.group(4)),
            )
            pending = None
    return report


def rocm_smi_state(text: str, device: int) -> DeviceState:
    """Clocks, temperature and power of one GPU from `rocm-smi` 'GPU[i] : key: value' lines."""
    gpu = parse_rocm_smi(text).gpus.get(device)
    if gpu is None:
        return DeviceState(tool="rocm-smi", note=f"no reading for GPU {device}")

    def clock(key: str) -> float | None:
        match = _MHZ.search(gpu.values.get(key, ""))
        return float(match.group(1)) if match else None

    def first(predicate) -> float | None:
        return next((number(v.split()[0]) for k, v in gpu.values.items() if predicate(k) and v.split()), None)

    return DeviceState(
        tool="rocm-smi",
        sm_clock_mhz=clock("sclk clock level"),
        memory_clock_mhz=clock("mclk clock level"),
        temperature_c=first(lambda k: k.startswith("Temperature (Sensor edge)") or k == "Temperature"),
        power_w=first(lambda k: "Package Power" in k and not k.startswith("Max")),
    )


def parse_idle_metric(text: str, max_busy_pct: float, max_memory_mib: float) -> list[int]:
    """The GPUs of `amd-smi metric --usage --mem-usage --json` at most `max_busy_pct` busy with at most `max_memory_mib` in use."""
    data = json.loads(text)
    gpus = data["gpu_data"] if isinstance(data, dict) and "gpu_data" in data else data
    idle = []
    for gpu in gpus:
        usage = gpu["usage"]["gfx_activity"]
        memory = gpu["mem_usage"]["used_vram"]
        util = usage["value"] if isinstance(usage, dict) else usage
        used = memory["value"] if isinstance(memory, dict) else memory
        if float(util) <= max_busy_pct and float(used) <= max_memory_mib:
            idle.append(int(gpu["gpu"]))
    return idle
