"""The parts Hyperloom knows, with datasheet peaks. Every figure here is ASSUMED: a vendor's number, not a measurement."""

from __future__ import annotations

from dataclasses import dataclass

from hyperloom.core.evidence import assumed
from hyperloom.core.hashing import sha256_json
from hyperloom.tools.detect.models import Peaks

AMD, NVIDIA = 0x1002, 0x10DE


@dataclass(frozen=True)
class Part:
    name: str
    vendor: int
    device_ids: tuple[int, ...]
    compute_units: int  # CUs (AMD) or SMs (NVIDIA) of the whole part
    target: str
    fp32_tflops: float
    fp16_tflops: float
    memory_gb: float
    memory_bandwidth_gbps: float
    source: str
    aliases: tuple[str, ...] = ()  # the names its driver reports where they differ (torch and nvidia-smi: "NVIDIA H100 80GB HBM3")

    def peaks(self) -> Peaks:
        figures = {k: getattr(self, k) for k in ("fp32_tflops", "fp16_tflops", "memory_gb", "memory_bandwidth_gbps")}
        return Peaks(
            part=self.name,
            source=self.source,
            evidence=assumed(f"datasheet: {self.source}", inputs_sha256=sha256_json({"part": self.name, **figures}), target=self.target),
            **figures,
        )


PARTS: tuple[Part, ...] = (
    Part("AMD Radeon RX 9070 XT", AMD, (0x7550,), 64, "gfx1201", 48.7, 97.3, 16, 640,
         "https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html"),
    Part("AMD Radeon RX 9070", AMD, (0x7550,), 56, "gfx1201", 36.1, 72.3, 16, 640,
         "https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070.html"),
    Part("AMD Radeon AI PRO R9700", AMD, (0x7551,), 64, "gfx1201", 47.8, 95.7, 32, 640,
         "https://www.amd.com/en/products/graphics/workstations/radeon-ai-pro/ai-9000-series/amd-radeon-ai-pro-r9700.html"),
    Part("AMD Radeon RX 7900 XTX", AMD, (0x744C,), 96, "gfx1100", 61.4, 122.8, 24, 960,
         "https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html"),
    Part("AMD Radeon RX 7900 XT", AMD, (0x744C,), 84, "gfx1100", 51.5, 103.0, 20, 800,
         "https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xt.html"),
    Part("AMD Instinct MI300X", AMD, (0x74A1,), 304, "gfx942", 81.7, 1307.4, 192, 5300,
         "AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x.html)"),
    Part("NVIDIA H100 SXM5 80GB", NVIDIA, (0x2330,), 132, "sm_90", 67.0, 989.4, 80, 3350,
         "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/)", ("NVIDIA H100 80GB HBM3",)),
    Part("NVIDIA H200", NVIDIA, (0x2335,), 132, "sm_90", 67.0, 989.4, 141, 4800,
         "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/)"),
)


def lookup(vendor: int, device_id: int | None, compute_units: int | None = None, name: str | None = None) -> Part | None:
    """The part with this PCI ID; where one ID covers several parts, the one whose name or unit count matches."""
    candidates = [p for p in PARTS if p.vendor == vendor and device_id in p.device_ids]
    if name:
        key = name.lower().lstrip(". ").removeprefix("amd ").strip()
        named = [p for p in PARTS if p.vendor == vendor and p.name.lower().endswith(key)]
        if named:
            return named[0]
    if len(candidates) > 1 and compute_units:
        exact = [p for p in candidates if p.compute_units == compute_units]
        candidates = exact or candidates
    return candidates[0] if candidates else None
