"""Request and result models of correctness_gate: the MCP schemas, the CLI's --json, the API types."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence

NanPolicy = Literal["forbid", "match"]
InlineDtype = Literal["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
# A JSON-safe array element: finite numbers as numbers, non-finite floats as "nan", "inf", "-inf".
Scalar = int | float | str
ArrayRef = str | list[Any]


class Tolerance(BaseModel):
    """Declared before any trial: an element matches when |c − r| ≤ atol + rtol·|r|,
    or, when max_ulp is set and the dtype is floating point, when c is within max_ulp units in
    the last place of r. NaN follows nan_policy; ±Inf must match in sign and position."""

    model_config = ConfigDict(frozen=True)

    atol: float = Field(ge=0, allow_inf_nan=False, description="Absolute tolerance, ≥ 0.")
    rtol: float = Field(ge=0, allow_inf_nan=False, description="Relative tolerance, ≥ 0, times |reference|.")
    max_ulp: int | None = Field(default=None, ge=0, description="Also accept float elements within this many ULPs of the reference.")
    nan_policy: NanPolicy = Field(default="forbid",
                                  description="'forbid': any NaN is a mismatch; 'match': NaN must sit where the reference has NaN.")


class GateRequest(Request):
    """One call of the gate: candidates, references (or a frozen reference set) and the tolerance."""


    candidates: list[ArrayRef] = Field(min_length=1, max_length=256, description=(
        "Per case: a .npy path or an inline list (\"nan\", \"inf\" as strings)."))
    references: list[ArrayRef] | None = Field(None, max_length=256, description="Per case, same forms.")
    reference_set: str | None = Field(None, description="A gate_freeze folder (gives the tolerance).")
    atol: float | None = Field(None, ge=0, allow_inf_nan=False, description="atol (unless reference_set).")
    rtol: float | None = Field(None, ge=0, allow_inf_nan=False, description="rtol (unless reference_set).")
    max_ulp: int | None = Field(None, ge=0, le=2**62, description="Or within this many ULPs.")
    nan_policy: NanPolicy | None = Field(None, description="Default forbid.")
    case_names: list[str] | None = Field(None, max_length=256, description="A name per case.")
    inline_dtype: InlineDtype | None = Field(None, description="dtype of inline lists.")
    target: str | None = Field(None, max_length=64, description="Their target.")
    max_reported_mismatches: int = Field(10, ge=0, le=1000, description="Mismatches shown.")


class Mismatch(BaseModel):
    index: list[int] = Field(description="Index of the element in the array.")
    candidate: Scalar
    reference: Scalar
    abs_error: float | None = Field(default=None, description="|candidate − reference| where both are finite.")
    ulp: int | None = Field(default=None, description="Distance in ULPs where both are finite floats.")


class SideCounts(BaseModel):
    candidate: int
    reference: int


class CaseVerdict(BaseModel):
    name: str
    passed: bool
    reason: str | None = Field(default=None, description="Why the case failed; null when it passed.")
    candidate_shape: list[int]
    reference_shape: list[int]
    candidate_dtype: str
    reference_dtype: str
    elements: int = Field(description="Elements compared (0 when shapes or dtypes differ).")
    mismatches: int
    mismatch_fraction: float
    max_abs_error: float | None = Field(description="Largest |c − r| over pairs where both are finite; null if none.")
    max_rel_error: float | None = Field(description="Largest |c − r| / |r| over finite pairs with r ≠ 0; null if none.")
    max_ulp: int | None = Field(description="Largest ULP distance over finite float pairs; null for integers or when none.")
    nan_count: SideCounts
    inf_count: SideCounts
    first_mismatches: list[Mismatch]
    candidate_sha256: str = Field(description="sha256 of the candidate as a .npy file.")
    reference_sha256: str = Field(description="sha256 of the reference as a .npy file.")


class GateResult(BaseModel):
    passed: bool = Field(description="True only when every case passed.")
    summary: str = Field(description="One line for a human or an agent.")
    tolerance: Tolerance
    reference_set: str | None = Field(description="The frozen reference set used, if any.")
    cases: list[CaseVerdict]
    evidence: Evidence


class OutputCheck(BaseModel):
    """One output of a launch against its frozen reference."""

    output: str = Field(description="The output buffer's argument name.")
    case: str = Field(description="The case's name in the verdict.")
    reference: str = Field(description="Absolute path of the frozen reference .npy.")
    reference_sha256: str = Field(description="Its hash, verified against the set's manifest by the caller.")


class OutputGate(BaseModel):
    """The gate a GPU worker applies to its own outputs while they are in its memory (tools/gate/outputs.py)."""

    checks: list[OutputCheck] = Field(min_length=1, max_length=256)
    tolerance: Tolerance
    reference_set: str = Field(description="The frozen set, relative to the workspace, as the verdict names it.")
    max_reported_mismatches: int = Field(10, ge=0, le=1000)


class FreezeRequest(Request):
    """Freeze reference outputs together with the tolerance declared for them."""


    out: str = Field(description="New workspace folder for the set.")
    references: list[str] = Field(min_length=1, max_length=256, description="Reference .npy per case.")
    inputs: list[str] = Field(default_factory=list, max_length=1024, description="Their input files (hashed).")
    atol: float = Field(ge=0, allow_inf_nan=False, description="atol.")
    rtol: float = Field(ge=0, allow_inf_nan=False, description="rtol.")
    max_ulp: int | None = Field(None, ge=0, le=2**62, description="ULP allowance for floats.")
    nan_policy: NanPolicy = Field("forbid", description="NaN handling.")
    case_names: list[str] | None = Field(None, max_length=256, description="A name per case.")
    overwrite: bool = Field(False, description="Replace a set.")


class FreezeResult(BaseModel):
    reference_set: str = Field(description="Folder of the frozen set, relative to the workspace.")
    manifest_sha256: str
    cases: list[str]
    tolerance: Tolerance
    evidence: Evidence
