"""Parse the AMD management tools: `rocm-smi -a` and the `amd-smi` default view."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_GPU_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.+?):\s*(.*)$")
_USING = re.compile(r"^PID (\d+) is using (\d+) DRM device\(s\)")
_AMDSMI_HEADER = re.compile(r"amdgpu version:\s*(\S+).*?ROCm version:\s*(\S+)")
_AMDSMI_ROW1 = re.compile(r"^\|\s*([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+(.*?)\s*\|.*?(\d+)/(\d+) W\s*\|")
_AMDSMI_ROW2 = re.compile(r"^\|\s*(\d+)\s+(\S+)\s+.*\|.*?(\d+)/(\d+) MB\s*\|")


@dataclass
class SmiGpu:
    index: int
    values: dict[str, str] = field(default_factory=dict)
    bus_id: str | None = None
    name: str | None = None
    vram_used_mb: int | None = None
    vram_total_mb: int | None = None
    power_cap_w: float | None = None

    @property
    def perf_level(self) -> str | None:
        return self.values.get("Performance Level")


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    gpus: tuple[int, ...]
    vram_bytes: int | None = None

    def describe(self) -> str:
        vram = f"{self.vram_bytes / 2**30:.1f} GiB" if self.vram_bytes is not None else "unknown VRAM"
        where = f"GPU {','.join(map(str, self.gpus))}" if self.gpus else "no GPU named"
        return f"PID {self.pid} ({self.name}, {vram}, {where})"


@dataclass
class SmiReport:
    tool: str
    gpus: dict[int, SmiGpu] = field(default_factory=dict)
    processes: list[GpuProcess] = field(default_factory=list)
    driver_version: str | None = None
    rocm_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    processes_listed: bool = False


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
    for number, line in enumerate(lines):
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
            follow = lines[number + 1].split() if number + 1 < len(lines) else []
            count = int(match.group(2))
            using[int(match.group(1))] = [int(x) for x in follow[:count] if x.isdigit()] if count else []
        elif line.startswith("=") and in_kfd and "KFD" not in line:
            in_kfd = False
    for gpu in report.gpus.values():
        gpu.bus_id = gpu.values.get("PCI Bus")
        gpu.power_cap_w = _float(gpu.values.get("Max Graphics Package Power (W)"))
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
