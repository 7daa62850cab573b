"""nvidia-smi read: its banner, the per-GPU and per-process queries, one GPU's clocks and power, idle GPUs, names, bus ids.

Each query's arguments stand beside the parser that reads its answer, which depends on their field order."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperloom.tools.smi.readings import DeviceState, GpuProcess, SmiGpu, number

QUERY_FIELDS = (
    "index", "name", "pci.bus_id", "driver_version", "compute_cap", "clocks.sm", "clocks.mem",
    "clocks.max.sm", "clocks.max.mem", "memory.used", "memory.total", "power.limit", "display_active", "persistence_mode",
)
QUERY_ARGS = (f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits")
APPS_ARGS = ("--query-compute-apps=pid,process_name,gpu_bus_id,used_memory", "--format=csv,noheader,nounits")
STATE_ARGS = ("--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader,nounits")
IDLE_QUERY_ARGS = ("--query-gpu=index,uuid,utilization.gpu,memory.used", "--format=csv,noheader,nounits")
NAME_ARGS = ("--query-gpu=name", "--format=csv,noheader")
BUS_ARGS = ("--query-gpu=index,pci.bus_id", "--format=csv,noheader")
_HEADER = re.compile(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")


@dataclass
class NvidiaGpu:
    fields: dict[str, str]

    def get(self, key: str) -> str | None:
        value = self.fields.get(key, "").strip()
        return None if value in ("", "[N/A]", "N/A", "[Not Supported]") else value

    def number(self, key: str) -> float | None:
        try:
            return float(self.get(key) or "")
        except ValueError:
            return None

    @property
    def index(self) -> int:
        return int(self.number("index") or 0)

    @property
    def sm(self) -> str | None:
        cap = self.get("compute_cap")
        return f"sm_{cap.replace('.', '')}" if cap else None


def parse_header(text: str) -> tuple[str | None, str | None]:
    """Driver and CUDA versions from plain `nvidia-smi`'s banner."""
    match = _HEADER.search(text)
    return (match.group(1), match.group(2)) if match else (None, None)


def parse_query(text: str) -> list[NvidiaGpu]:
    """Each GPU of `nvidia-smi QUERY_ARGS`."""
    gpus = []
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(QUERY_FIELDS) and values[0].isdigit():
            gpus.append(NvidiaGpu(dict(zip(QUERY_FIELDS, values))))
    return gpus


def parse_apps(text: str, gpus: list[NvidiaGpu]) -> list[GpuProcess]:
    """The processes of `nvidia-smi APPS_ARGS`, each on the GPU (of `gpus`) at its bus id."""
    by_bus = {(g.get("pci.bus_id") or "").lower(): g.index for g in gpus}
    processes = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            mib = float(parts[3]) if parts[3].replace(".", "", 1).isdigit() else None
            gpu = by_bus.get(parts[2].lower())
            processes.append(GpuProcess(int(parts[0]), parts[1], (gpu,) if gpu is not None else (),
                                        int(mib * 2**20) if mib is not None else None))
    return processes


def nvidia_smi_state(returncode: int, stdout: str, stderr: str) -> DeviceState:
    """One GPU's clocks, power and temperature from `nvidia-smi --id=N STATE_ARGS`; a note where it gave none."""
    fields = stdout.strip().splitlines()[0].split(",") if returncode == 0 and stdout.strip() else []
    if len(fields) != 4:
        return DeviceState(tool="nvidia-smi", note=f"no reading: {stderr.strip()[:200] or 'unexpected output'}")
    sm, mem, power, temp = map(number, fields)
    return DeviceState(tool="nvidia-smi", sm_clock_mhz=sm, memory_clock_mhz=mem, power_w=power, temperature_c=temp)


def parse_idle_query(text: str, max_busy_pct: float, max_memory_mib: float) -> list[SmiGpu]:
    """The GPUs of `nvidia-smi IDLE_QUERY_ARGS` at most `max_busy_pct` busy with at most `max_memory_mib` in use."""
    idle = []
    for line in text.strip().splitlines():
        index, uuid, util, memory = (part.strip() for part in line.split(","))
        if float(util) <= max_busy_pct and float(memory) <= max_memory_mib:
            idle.append(SmiGpu(int(index), uuid))
    return idle


def parse_names(text: str) -> list[str]:
    """The GPU names of `nvidia-smi NAME_ARGS`, one a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_bus_ids(text: str) -> dict[int, str]:
    """Each GPU's PCI bus id (lower case) by its index, from `nvidia-smi BUS_ARGS`."""
    return {int(index): bus.strip().lower() for index, bus in (line.split(",") for line in text.strip().splitlines())}
