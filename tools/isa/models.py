"""Request and result models of isa_census, isa_probe and isa_audit: the MCP schemas, the CLI's
--json, the Python API types, and the stored census document (results/isa/<target>.json)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence

FORMAT = "hyperloom.isa_census/1"
VERSION_NOTE = (
    "The census depends on the LLVM version: another llvm-mc may accept other aliases, rename or drop "
    "instructions, and know other targets. Compare censuses only when they name the same LLVM version."
)
ErrorClass = Literal[
    "unknown_mnemonic",
    "not_supported_on_this_gpu",
    "operands_not_valid_for_gpu_or_mode",
    "invalid_operand",
    "too_few_operands",
    "other",
]
Target = Annotated[str, Field(min_length=3, max_length=40, pattern=r"^[a-z0-9][a-z0-9_-]*$")]
TARGET_HELP = "AMDGPU target, e.g. gfx1201."

# ---------------------------------------------------------------- the stored census


class LlvmInfo(BaseModel):
    version: str = Field(description="llvm-mc's version number, e.g. '19.1.7'.")
    version_line: str = Field(description="The line of `llvm-mc --version` it came from.")
    sha256: str = Field(description="sha256 of the llvm-mc binary (symlinks followed).")


class InstructionEntry(BaseModel):
    name: str = Field(description="Mnemonic without encoding suffixes (_e32, _e64, _dpp, _sdwa).")
    kind: Literal["canonical", "alias"] = Field(
        description="canonical: printed by the disassembler; alias: accepted by the assembler but never printed (a spelling of a "
                    "canonical instruction)."
    )
    families: list[str] = Field(description="Encoding families whose opcodes decode to it (empty for aliases).")
    example: str | None = Field(default=None, description="One decoded instance, as llvm-mc prints it (null for aliases).")
    encoding: str | None = Field(default=None, description="The example's bytes as llvm-mc re-encodes them.")
    reassembles: bool | None = Field(default=None, description="Whether the example assembles again; false flags printed operands that are "
                                                               "unusable as they stand.")


class CapabilityEntry(BaseModel):
    name: str
    description: str
    present: bool
    instructions: list[str] = Field(description="Canonical instructions that prove the capability.")


class DroppedGroup(BaseModel):
    family: str
    encoding: str = Field(description="The candidate bytes that crashed llvm-mc.")


class CensusChecks(BaseModel):
    """Self-checks run with every census."""

    sweep_groups: int = Field(description="Candidate encodings fed to the disassembler.")
    crashed_runs: int = Field(description="llvm-mc runs that crashed and were bisected.")
    dropped_groups: list[DroppedGroup] = Field(description="Groups that crash llvm-mc, dropped from the sweep.")
    mnemonic_source: str = Field(description="Where the probe's candidate mnemonics came from.")
    sweep_subset_of_probe: bool = Field(description="Every name the disassembler printed is accepted by the assembler.")
    sweep_not_in_probe: list[str] = Field(description="Names the disassembler printed that the assembler refused (should be empty).")
    checked_by_example: list[str] = Field(
        description="VOPD second-slot names, which the assembler takes only inside a dual instruction: accepted through their "
                    "re-assembled example."
    )
    examples_reassembled: int = Field(description="Canonical instructions whose example assembled again.")
    examples_not_reassembled: list[str] = Field(description="Canonical instructions whose example did not assemble (flagged, "
                                                            "still present).")
    layouts_verified: bool = Field(description="Whether this target's encoding layouts were checked bit by bit (layouts.py).")
    notes: list[str] = Field(default_factory=list)


class Census(BaseModel):
    """The full census of one target, as cached and as committed in results/isa/<target>.json."""

    format: Literal["hyperloom.isa_census/1"] = FORMAT
    target: str
    generation: str
    llvm: LlvmInfo
    canonical_count: int
    alias_count: int
    families: dict[str, int] = Field(description="Canonical instructions per encoding family.")
    instructions: list[InstructionEntry]
    capabilities: list[CapabilityEntry]
    checks: CensusChecks
    version_note: str = VERSION_NOTE
    evidence: Evidence

    def names(self, kind: str = "canonical") -> set[str]:
        return {i.name for i in self.instructions if i.kind == kind}


# ---------------------------------------------------------------- isa_census


class CensusRequest(Request):
    """One target's instruction set: a summary, pages of instructions, or a comparison."""


    target: Target = Field(description=TARGET_HELP)
    compare_to: Target | None = Field(None, description="A target to diff.")
    detail: bool = Field(False, description="List instructions (paged).")
    match: str | None = Field(None, min_length=1, max_length=64, description="Names containing this.")
    offset: int = Field(0, ge=0, le=100_000, description="First list entry.")
    limit: int = Field(15, ge=1, le=2000, description="Per page.")
    refresh: bool = Field(False, description="Skip the cache.")


class CapabilitySummary(BaseModel):
    name: str
    description: str
    proof: list[str] = Field(description="Up to four instructions that prove it.")
    proof_count: int


class Comparison(BaseModel):
    other: str
    only_in_target: list[str] = Field(description="Canonical instructions the target has and the other lacks under any name (paged).")
    only_in_target_count: int
    only_in_other: list[str] = Field(description="Canonical instructions the other has and the target lacks under any name (paged).")
    only_in_other_count: int
    renamed: list[tuple[str, str]] = Field(default_factory=list, description=(
        "Operations both have under different names, (name on the target, name on the other): one target's assembler takes the"
        " other's name and prints its own (paged)."))
    renamed_count: int = 0
    common_count: int
    capabilities_only_in_target: list[str]
    capabilities_only_in_other: list[str]


class CensusResult(BaseModel):
    target: str
    generation: str
    llvm_version: str
    summary: str = Field(description="One paragraph for an agent.")
    canonical_count: int
    alias_count: int
    families: dict[str, int]
    capabilities_present: list[CapabilitySummary] = Field(description="Empty in a listing or comparison (detail, match, compare_to): the "
                                                                      "plain summary has them.")
    capabilities_absent: list[str] = Field(description="Empty in a listing or comparison, as capabilities_present.")
    checks: CensusChecks = Field(description="Self-checks; long name lists are cut to 10 entries.")
    instructions: list[InstructionEntry] = Field(description="The requested page of instructions (empty unless detail or match).")
    listed_total: int = Field(description="Instructions matching the listing filter.")
    next_offset: int | None = Field(description="Offset of the next page, or null at the end.")
    compare: Comparison | None = None
    from_cache: bool = Field(description="True when the census was read from the cache (its evidence keeps the original time).")
    version_note: str
    evidence: Evidence


# ---------------------------------------------------------------- isa_probe


class ProbeRequest(Request):
    """Assemble instruction lines, with operands, for one target."""


    target: Target = Field(description=TARGET_HELP)
    lines: list[Annotated[str, Field(max_length=300)]] = Field(
        min_length=1, max_length=500, description="Instruction lines."
    )
    wave64: bool = Field(False, description="wave64 mode.")


class ProbeLine(BaseModel):
    line: str
    accepted: bool
    error_class: ErrorClass | None = Field(description="LLVM's error class when rejected; null when accepted.")
    message: str | None = Field(description="LLVM's error message when rejected.")
    printed: str | None = Field(description="The instruction as llvm-mc prints it back (canonical spelling).")
    encoding: str | None


class ProbeResult(BaseModel):
    target: str
    wave64: bool
    accepted: int
    rejected: int
    lines: list[ProbeLine]
    summary: str
    evidence: Evidence


# ---------------------------------------------------------------- isa_audit


class AuditRequest(Request):
    """Which of the target's capabilities a set of code objects never uses."""


    target: Target = Field(description="AMDGPU target, e.g. gfx1201.")
    paths: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        min_length=1, max_length=64, description="Code objects or folders."
    )


class CodeObjectSeen(BaseModel):
    path: str
    kernels: list[str]


class CapabilityUse(BaseModel):
    name: str
    description: str
    used: bool
    used_instructions: list[str] = Field(description="Instructions of this capability found in the code objects.")
    kernels: list[str] = Field(description="Up to five kernels that use it.")
    available: list[str] = Field(description="Up to five of the target's instructions that provide it.")


class AuditResult(BaseModel):
    target: str
    summary: str
    code_objects: list[CodeObjectSeen]
    skipped: list[str] = Field(description="Files or bundle entries not audited, with the reason.")
    distinct_instructions: int = Field(description="Distinct instructions in the audited disassembly.")
    unused_capabilities: list[str] = Field(description="Capabilities the target has that no audited kernel uses.")
    capabilities: list[CapabilityUse] = Field(description="Every capability the target has, used or not.")
    not_in_census: list[str] = Field(description="Instructions in the code objects that the census lacks (should be empty).")
    evidence: Evidence
