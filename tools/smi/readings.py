"""What an smi tool says: a GPU as it numbers them, a process holding a GPU, one report, one device's clocks and power."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel


@dataclass(frozen=True)
class SmiGpu:
    """A GPU as an smi tool numbers it (physically), with what that tool said of it: its UUID, rocm-smi's 'key: value'
    lines, amd-smi's bus, name, VRAM and power cap."""

    index: int
    uuid: str | None = None
    values: dict[str, str] = field(default_factory=dict, hash=False)
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


class DeviceState(BaseModel):
    tool: str
    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    note: str = ""


def number(text: str) -> float | None:
    """A bare number as an smi tool prints it; None for anything else ('[N/A]', '')."""
    try:
        return float(text.strip())
    except ValueError:
        return None
