"""Request and result models of detect: the MCP schemas, the CLI's --json, the API types."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence

Layer = Literal["silicon", "driver", "runtime", "compiler", "nvidia"]
Status = Literal["ok", "warn", "fail", "unknown"]
LAYERS: tuple[Layer, ...] = ("silicon", "driver", "runtime", "compiler", "nvidia")
# Worst first: a layer's status is the worst of its findings.
SEVERITY: dict[Status, int] = {"fail": 3, "warn": 2, "unknown": 1, "ok": 0}


class DetectRequest(Request):
    """One look at the GPU stack, live or from a recorded root."""


    root: str | None = Field(
        None,
        max_length=4096,
        description="A recorded machine's folder to replay.",
    )
    timeout_s: float = Field(10.0, gt=0, le=120, description="Per vendor tool.")
    detail: bool = Field(False, description="Every check in full.")


Value = str | int | float | bool | None


class Finding(BaseModel):
    """One check of one layer, with the tool that is ground truth for it and what to do about it."""

    layer: Layer
    check: str = Field(description="Stable name of the check, e.g. 'kfd_topology' or 'trap.rocr_visible_devices'.")
    status: Status
    summary: str = Field(description="One line: what was found.")
    details: dict[str, Value] = Field(default_factory=dict, description="The values read, with units in their names.")
    source: str = Field(description="The command run or the file read that produced this finding.")
    ground_truth: str = Field(description="The tool (or file) that is ground truth for this layer.")
    fix: str | None = Field(None, description="What to do when status is not ok; for unknown, what to install or check.")
    evidence: Evidence | None = Field(description="Null without detail: the result's evidence covers every check.")


class Passed(BaseModel):
    """A check that found nothing wrong, in one line (the default answer; detail=true gives it as a finding)."""

    layer: Layer
    check: str
    summary: str


class Peaks(BaseModel):
    """Datasheet peaks of a part: ASSUMED figures, never measured here."""

    part: str
    fp32_tflops: float = Field(description="Peak FP32 vector TFLOP/s as the datasheet lists it.")
    fp16_tflops: float = Field(description="Peak FP16/BF16 TFLOP/s (dense) as the datasheet lists it.")
    memory_gb: float = Field(description="Memory capacity in GB (datasheet).")
    memory_bandwidth_gbps: float = Field(description="Peak memory bandwidth in GB/s (datasheet).")
    source: str = Field(description="The datasheet or spec page the figures come from.")
    evidence: Evidence


class Gpu(BaseModel):
    """One GPU as the lowest layer that saw it reports it."""

    index: int = Field(description="Index as the vendor runtime numbers it (HIP/ROCr order for AMD, CUDA order for NVIDIA).")
    vendor: Literal["amd", "nvidia"]
    name: str
    target: str | None = Field(description="gfx target (AMD) or sm_XY (NVIDIA).")
    pci_device_id: str | None = None
    bus_id: str | None = None
    compute_units: int | None = Field(None, description="CUs (AMD) or SMs (NVIDIA).")
    simd_per_cu: int | None = None
    wave_size: int | None = None
    max_waves_per_cu: int | None = None
    lds_kib: int | None = None
    memory_banks: int | None = None
    vram_bytes: int | None = None
    compute_capability: str | None = None
    part_compute_units: int | None = Field(None, description="The whole part's CUs when this node is a partition of it (MI300X in CPX "
                                                             "mode); peaks are the part's.")
    part: str | None = Field(None, description="Its key in `parts`, when the part is known.")
    evidence: Evidence | None = Field(description="Null without detail: the result's evidence covers it.")


class DetectResult(BaseModel):
    summary: str = Field(description="One line for a human or an agent: GPUs found and the lowest layer with a fault.")
    gpus: list[Gpu] = Field(description="The GPUs; without detail at most 8 (the summary counts all).")
    more_gpus: int = Field(0, description="GPUs left out of `gpus` without detail.")
    layers: dict[str, Status] = Field(description="Worst status of each layer, bottom-up.")
    parts: dict[str, Peaks] = Field(default_factory=dict, description="Datasheet peaks (ASSUMED) by part name.")
    findings: list[Finding] = Field(description="Checks bottom-up (silicon to nvidia); without detail only those not ok.")
    passed: list[Passed] = Field(default_factory=list, description="Checks that are ok, one line each (without detail).")
    root: str | None = Field(description="The recorded root replayed, or null for this machine.")
    evidence: Evidence
