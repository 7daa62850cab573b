"""Request and result models of roofline."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence

Microbench = Literal["copy", "read", "write", "fma", "mma_f16", "mma_i8", "lds", "matrix_f16", "matrix_i8", "matrix_i4"]


class RooflineRequest(Request):

    target: str = Field("sm_90", description="gfx (hip), sm_XX (cuda) or host (c).")
    device: int = Field(0, ge=0, le=63, description="GPU index.")
    ceilings: list[Microbench] | None = Field(None, description="Microbenchmarks; default all that build.")
    shape: Literal["small", "full"] = Field("full", description="'small' for a quick check.")
    place: list[str] = Field(default_factory=list, max_length=64, description="bench --json files to place.")
    same_size_read: bool = Field(True, description="Time a same-size read too.")
    out_dir: str = Field(".hyperloom/roofline", description="Output folder.")
    plot: bool = Field(True, description="Write PNG and SVG plots.")
    max_time_s: float = Field(5.0, gt=0, le=600, description="Per microbenchmark.")


class Ceiling(BaseModel):
    name: str
    kind: Literal["memory", "compute",
                  "lds"] = Field(description="DRAM ('memory'), on-chip shared memory ('lds'), or arithmetic ('compute').")
    value: float = Field(description="GB/s for memory ceilings, TFLOP/s for compute ceilings.")
    unit: Literal["GB/s", "TFLOP/s"]
    source: str = Field(description="The microbenchmark and its summary, or the datasheet.")
    evidence: Evidence


class Placement(BaseModel):
    name: str
    arithmetic_intensity: float | None = Field(description="flops per byte; null for kernels with no flop count.")
    achieved_gbps: float | None
    achieved_tflops: float | None
    attainable: float = Field(description="The roof at this kernel's intensity, in the unit of its bound.")
    percent_of_roof: float
    bound: Literal["memory", "compute"]
    roof: str = Field(description="Which measured ceiling bounds it.")
    same_size_read_gbps: float | None = Field(None, description="GB/s of a read of as many bytes as this kernel moves (same_size_read); "
                                                                "null when not measured.")
    percent_of_same_size_read: float | None = Field(None, description="achieved_gbps as a percent of same_size_read_gbps.")
    evidence: Evidence


class RooflineResult(BaseModel):
    summary: str
    target: str
    device: str
    measured: list[Ceiling]
    datasheet: list[Ceiling] = Field(description="Vendor peaks for the detected part: ASSUMED, never a measurement.")
    placements: list[Placement]
    files: list[str] = Field(description="roofline.json and plots, relative to the workspace.")
    evidence: Evidence
