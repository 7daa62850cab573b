"""isa_census as an agent sees it: a summary sized for a context window, pages on request."""

from __future__ import annotations

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.isa.census import census
from hyperloom.tools.isa.compare import compare
from hyperloom.tools.isa.models import Census, CensusChecks, CensusRequest, CensusResult, CapabilitySummary, Comparison
from hyperloom.tools.isa.targets import find_llvm_mc

SHOWN_NAMES = 10
PROOF_SHOWN = 4
# The summary's last sentence, in the request's own terms; the CLI says it with its flags instead.
LISTING_HINT = "List instructions with detail=true, or match='dot8' (any part of a name); page with offset and limit."


def run_census(request: CensusRequest, workspace: Workspace, progress: ProgressFn | None = None) -> CensusResult:
    """The census of request.target (cached unless refresh), summarised, optionally listed or compared."""
    del workspace  # the census reads no caller files
    llvm = find_llvm_mc()
    measured, from_cache = census(request.target, refresh=request.refresh, llvm=llvm, progress=progress)
    listing = [i for i in measured.instructions if request.match in i.name] if request.match else measured.instructions
    listed = request.detail or request.match is not None
    end = request.offset + request.limit
    comparison = None
    if request.compare_to is not None:
        from hyperloom.tools.isa.renames import renames  # the assembler's modules: only a comparison needs them

        other, _ = census(request.compare_to, refresh=request.refresh, llvm=llvm)
        comparison = compare(measured, other, request.offset, request.limit, renames(measured, other, llvm.path))
    longest = max(
        len(listing) if listed else 0,
        comparison.only_in_target_count if comparison else 0,
        comparison.only_in_other_count if comparison else 0,
        comparison.renamed_count if comparison else 0,
    )
    paged = listed or comparison is not None
    return CensusResult(
        target=measured.target,
        generation=measured.generation,
        llvm_version=measured.llvm.version,
        summary=summarise(measured, comparison, listed, paged),
        canonical_count=measured.canonical_count,
        alias_count=measured.alias_count,
        families=measured.families,
        # a page of a listing or a comparison carries that; the capabilities come once, in the plain summary
        capabilities_present=[] if paged else [
            CapabilitySummary(name=c.name, description=c.description, proof=c.instructions[:PROOF_SHOWN], proof_count=len(c.instructions))
            for c in measured.capabilities
            if c.present
        ],
        capabilities_absent=[] if paged else [c.name for c in measured.capabilities if not c.present],
        checks=shortened(measured.checks),
        instructions=listing[request.offset : end] if listed else [],
        listed_total=len(listing) if listed else 0,
        next_offset=end if end < longest else None,
        compare=comparison,
        from_cache=from_cache,
        version_note=measured.version_note,
        evidence=measured.evidence,
    )


def shortened(checks: CensusChecks) -> CensusChecks:
    """The checks with every name list cut to SHOWN_NAMES entries (counts stay in the summary)."""
    return checks.model_copy(
        update={
            "sweep_not_in_probe": checks.sweep_not_in_probe[:SHOWN_NAMES],
            "checked_by_example": checks.checked_by_example[:SHOWN_NAMES],
            "examples_not_reassembled": checks.examples_not_reassembled[:SHOWN_NAMES],
            "dropped_groups": checks.dropped_groups[:SHOWN_NAMES],
        }
    )


def summarise(measured: Census, comparison: Comparison | None, listed: bool, paged: bool) -> str:
    present = [c.name for c in measured.capabilities if c.present]
    absent = [c.name for c in measured.capabilities if not c.present]
    checks = measured.checks
    parts = [
        f"{measured.target} ({measured.generation}), measured with llvm-mc {measured.llvm.version}: "
        f"{measured.canonical_count} canonical instructions in {len(measured.families)} encoding families, "
        f"plus {measured.alias_count} assembler aliases.",
        f"{len(present)} of {len(measured.capabilities)} known capabilities present, {len(absent)} absent"
        + (" (named in the plain census, without a listing or comparison)." if paged else ", each present one with the instructions that prove it."),
        "Self-checks: "
        + ("every disassembled name is accepted by the assembler" if checks.sweep_subset_of_probe else f"{len(checks.sweep_not_in_probe)} disassembled names refused by the assembler")
        + f"; {checks.examples_reassembled} of {measured.canonical_count} examples re-assemble"
        + (f" (the other {len(checks.examples_not_reassembled)} print operands llvm-mc does not accept back as printed: the "
           "instructions are real and stay in the census)"
           if checks.examples_not_reassembled else "")
        + (f"; {len(checks.dropped_groups)} encodings that crash llvm-mc were dropped" if checks.dropped_groups else "; llvm-mc did not crash")
        + ("" if checks.layouts_verified else "; this target's layouts are unverified")
        + ".",
    ]
    if comparison is not None:
        parts.append(
            f"Against {comparison.other}: {comparison.only_in_target_count} instructions only here, "
            f"{comparison.only_in_other_count} only there, {comparison.common_count} shared, and {comparison.renamed_count} "
            "renamed (one operation, two names: one assembler takes the other's name and prints its own); capabilities only here: "
            f"{', '.join(comparison.capabilities_only_in_target) or 'none'}; only there: "
            f"{', '.join(comparison.capabilities_only_in_other) or 'none'}."
        )
    if not listed:
        parts.append(LISTING_HINT)
    return " ".join(parts)
