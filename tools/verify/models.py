"""Request and result models of disasm_verify."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence


class VerifyRequest(Request):

    code_object: str = Field(min_length=1, description="Code object or .cubin.")
    kernels: list[str] | None = Field(None, max_length=64, description="Kernels to check; default all.")
    expect: list[str] = Field(
        default_factory=list, max_length=64,
        description="Must match in each kernel: a name, a glob (v_wmma_*) or a set (@wmma @mfma @dot4_i8 ..., the skill lists them); "
                    "optionally >=N.",
    )
    forbid: list[str] = Field(default_factory=list, max_length=64, description="Must match in no kernel.")
    check_spills: bool = Field(True, description="Fail kernels that spill.")
    histogram_top: int = Field(20, ge=0, le=2000, description="Histogram size.")
    lines_per_rule: int = Field(5, ge=0, le=200, description="Lines per rule.")


class Count(BaseModel):
    mnemonic: str
    count: int


class KernelSummary(BaseModel):
    name: str
    target: str
    instructions: int
    histogram: list[Count] = Field(description="The most frequent instructions (full mnemonics).")
    vgpr_spills: int | None = None
    sgpr_spills: int | None = None
    scratch_bytes: int | None = Field(None, description="Declared scratch (AMD private segment) or local memory (NVIDIA) per lane.")


class RuleVerdict(BaseModel):
    kernel: str
    kind: Literal["expect", "forbid", "spills"]
    rule: str
    passed: bool
    found: int = Field(description="How many instructions matched.")
    requirement: str
    matched: list[str] = Field(description="The distinct mnemonics that matched.")
    lines: list[str] = Field(description="The first matching lines, 'address: instruction'.")
    note: str | None = None


class VerifyResult(BaseModel):
    passed: bool
    summary: str
    code_object: str
    targets: list[str]
    kernels: list[KernelSummary]
    verdicts: list[RuleVerdict]
    evidence: Evidence
