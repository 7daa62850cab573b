"""The tools Hyperloom offers, described once for every front end (MCP server, CLI, Python API)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.check import run_gate
from hyperloom.tools.gate.freeze import freeze
from hyperloom.tools.gate.models import FreezeRequest, FreezeResult, GateRequest, GateResult
from hyperloom.tools.isa.audit import run_audit
from hyperloom.tools.isa.models import AuditRequest, AuditResult, CensusRequest, CensusResult, ProbeRequest, ProbeResult
from hyperloom.tools.isa.probe import run_probe
from hyperloom.tools.isa.report import run_census


@dataclass(frozen=True)
class ToolDef:
    """One tool: its models, its function, and truthful behaviour hints."""

    name: str
    title: str
    description: str
    request: type[BaseModel]
    result: type[BaseModel]
    run: Callable[[Any, Workspace, ProgressFn | None], BaseModel]
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False


def _freeze(request: FreezeRequest, workspace: Workspace, progress: ProgressFn | None) -> FreezeResult:
    del progress  # freezing copies and hashes a few files; nothing to report along the way
    return freeze(request, workspace)


CATALOG: tuple[ToolDef, ...] = (
    ToolDef(
        name="correctness_gate",
        title="Correctness gate",
        description=(
            "Decide whether candidate kernel outputs match their references under a tolerance declared in advance. "
            "An element matches when |c - r| <= atol + rtol*|r| (or within max_ulp ULPs, when set); NaN follows "
            "nan_policy; +/-Inf must match in sign and position. Give candidates and references as .npy paths inside "
            "the workspace or small inline lists, one per case, or give a frozen reference_set (its tolerance is used). "
            "Returns a verdict per case and overall, error statistics, the first mismatches, sha256 of both sides and "
            "MEASURED evidence. A candidate that fails has no speed worth measuring: fix it before benchmarking."
        ),
        request=GateRequest,
        result=GateResult,
        run=run_gate,
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="gate_freeze",
        title="Freeze a reference set",
        description=(
            "Freeze reference outputs with the tolerance declared for them, before any candidate is tried: copies "
            "each reference .npy into a new folder and writes manifest.json with the tolerance and the sha256 of "
            "every input and output. correctness_gate then takes reference_set=<folder> and refuses it if anything "
            "changed. Refuses to replace an existing folder unless overwrite is true."
        ),
        request=FreezeRequest,
        result=FreezeResult,
        run=_freeze,
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    ToolDef(
        name="isa_census",
        title="ISA census of an AMD GPU target",
        description=(
            "The real instruction set of an AMDGPU target (e.g. gfx1201, gfx1100, gfx942), measured with LLVM's "
            "disassembler (every opcode of every encoding family) and assembler (aliases). Returns a summary: counts, "
            "the capabilities present with the instructions that prove them (int dot2/dot4/dot8 signed/unsigned/mixed, "
            "fp8 dots and conversions, WMMA, SWMMAC, MFMA, packed FP32, VOPD, transpose and LDS loads, float atomics, ...), "
            "those absent, and self-checks. detail=true or match='wmma' lists instructions with an example encoding, "
            "paged by offset/limit; compare_to=<target> lists what each target has that the other lacks. MEASURED "
            "with a named llvm-mc version; the census depends on that version. Cached per llvm-mc binary and target."
        ),
        request=CensusRequest,
        result=CensusResult,
        run=run_census,
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="isa_probe",
        title="Assemble instructions for a target",
        description=(
            "Assemble instruction lines with operands (e.g. 'v_dot8_i32_iu4 v1, v2, v3, v4') for one AMDGPU target "
            "with llvm-mc. Each line is accepted, with its canonical spelling and encoding, or rejected with LLVM's "
            "error class: unknown_mnemonic (LLVM does not know it), not_supported_on_this_gpu, "
            "operands_not_valid_for_gpu_or_mode (e.g. wave32 vs wave64 register widths; try wave64=true), "
            "invalid_operand, too_few_operands, other. One instruction per line; directives are refused."
        ),
        request=ProbeRequest,
        result=ProbeResult,
        run=run_probe,
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
    ToolDef(
        name="isa_audit",
        title="Capabilities a set of kernels leaves unused",
        description=(
            "Disassemble code objects (.hsaco files, offload bundles, or folders of them, inside the workspace) built "
            "for a target and report which of the target's capabilities (from isa_census) their kernels never use, "
            "with the instructions that would provide each: what those kernels leave on the table. Code objects for "
            "other targets are skipped and listed."
        ),
        request=AuditRequest,
        result=AuditResult,
        run=run_audit,
        read_only=True,
        destructive=False,
        idempotent=True,
    ),
)


def tool(name: str) -> ToolDef:
    """The catalog entry called `name`."""
    for entry in CATALOG:
        if entry.name == name:
            return entry
    raise KeyError(name)
