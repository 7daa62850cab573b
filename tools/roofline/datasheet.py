"""The datasheet's ceilings of a known part: vendor peaks, ASSUMED, never a measurement."""

from __future__ import annotations

from hyperloom.core.evidence import assumed
from hyperloom.core.hashing import sha256_json
from hyperloom.tools.detect.parts import PARTS
from hyperloom.tools.roofline.models import Ceiling


def datasheet_ceilings(device_name: str, target: str) -> list[Ceiling]:
    """The vendor peaks of the part this device is, when Hyperloom knows it: ASSUMED."""
    matched = [(len(name), p) for p in PARTS for name in (p.name, *p.aliases)
               if name.lower().replace("nvidia ", "").replace("amd ", "") in device_name.lower()]
    if not matched:
        return []
    part = max(matched, key=lambda m: m[0])[1]  # the longest name that matches: the most specific part
    evidence = assumed(f"datasheet: {part.source}", inputs_sha256=sha256_json({"part": part.name}), target=target)
    return [
        Ceiling(name="datasheet memory", kind="memory", value=part.memory_bandwidth_gbps, unit="GB/s", source=part.source,
                evidence=evidence),
        Ceiling(name="datasheet FP32", kind="compute", value=part.fp32_tflops, unit="TFLOP/s", source=part.source, evidence=evidence),
        Ceiling(name="datasheet FP16 dense", kind="compute", value=part.fp16_tflops, unit="TFLOP/s", source=part.source, evidence=evidence),
    ]
