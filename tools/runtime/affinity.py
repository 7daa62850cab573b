"""A GPU worker on the CPU cores next to its GPU: the cores of the NUMA node its PCI slot hangs off.

Host memory a process touches first is placed on the node it runs on, so a warm worker bound here keeps
its input arrays on its GPU's side of the machine: copies to the device do not cross the link between
sockets, and two GPUs' workers do not share one node's cores and memory bandwidth. Best effort: a
driver without the call, a machine without the sysfs file, or a container that allows none of those
cores leaves the process where it was.
"""

from __future__ import annotations

import os
from pathlib import Path

PCI_DEVICES = Path("/sys/bus/pci/devices")


def parse_cpulist(text: str) -> set[int]:
    """The CPUs of a sysfs list such as '0-15,32-47'."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def sysfs_address(bus_id: str) -> str:
    """A driver's PCI bus id ('00000000:1B:00.0' or '0000:1b:00.0') as sysfs names the device ('0000:1b:00.0')."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def local_cpus(bus_id: str, devices: Path = PCI_DEVICES) -> set[int]:
    """The CPUs next to the PCI device, among those this process may use; empty when unknown."""
    try:
        listed = parse_cpulist((devices / sysfs_address(bus_id) / "local_cpulist").read_text())
    except (OSError, ValueError):
        return set()
    return listed & os.sched_getaffinity(0)


def bind_near(bus_id: str | None, devices: Path = PCI_DEVICES) -> list[int]:
    """Run this process on the CPUs next to the device; the CPUs it runs on now ([] when left as it was)."""
    cpus = local_cpus(bus_id, devices) if bus_id else set()
    if not cpus or cpus == os.sched_getaffinity(0):
        return []
    os.sched_setaffinity(0, cpus)
    return sorted(cpus)
