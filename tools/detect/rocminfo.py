"""Parse `rocminfo`: the ROCr runtime's own list of agents (CPUs and GPUs) and the kernel module it found."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MODULE = re.compile(r"ROCk module(?: version (\S+))? is loaded")
_NUMBER = re.compile(r"^(\d+)")


@dataclass(frozen=True)
class Agent:
    name: str
    marketing_name: str | None
    device_type: str
    node: int | None
    chip_id: int | None
    compute_units: int | None
    simds_per_cu: int | None
    wavefront_size: int | None
    max_waves_per_cu: int | None

    @property
    def is_gpu(self) -> bool:
        return self.device_type == "GPU"


def _int(value: str | None) -> int | None:
    match = _NUMBER.match(value or "")
    return int(match.group(1)) if match else None


def parse_rocminfo(text: str) -> tuple[list[Agent], str | None]:
    """Agents in listed order, and the ROCk (amdgpu/KFD) module version when rocminfo prints it."""
    module = _MODULE.search(text)
    agents: list[Agent] = []
    for block in re.split(r"\*{7}\s*\n\s*Agent \d+\s*\n\s*\*{7}", text)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith("  ") and not line.startswith("   ") and ":" in line:
                key, _, value = line.strip().partition(":")
                fields.setdefault(key.strip(), value.strip())
        if "Name" not in fields:
            continue
        agents.append(Agent(
            name=fields["Name"],
            marketing_name=fields.get("Marketing Name") or None,
            device_type=fields.get("Device Type", ""),
            node=_int(fields.get("Node")),
            chip_id=_int(fields.get("Chip ID")),
            compute_units=_int(fields.get("Compute Unit")),
            simds_per_cu=_int(fields.get("SIMDs per CU")),
            wavefront_size=_int(fields.get("Wavefront Size")),
            max_waves_per_cu=_int(fields.get("Max Waves Per CU")),
        ))
    return agents, (module.group(1) if module else None)
