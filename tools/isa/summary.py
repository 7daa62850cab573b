"""isa_census's summary, sized for a context window: the checks cut short, the census told in a few sentences."""

from __future__ import annotations

from hyperloom.tools.isa.models import Census, CensusChecks, Comparison

SHOWN_NAMES = 10
# The summary's last sentence, in the request's own terms; the CLI says it with its flags instead.
LISTING_HINT = "List instructions with detail=true, or match='dot8' (any part of a name); page with offset and limit."


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
        + (" (named in the plain census, without a listing or comparison)." if paged
           else ", each present one with the instructions that prove it."),
        "Self-checks: "
        + ("every disassembled name is accepted by the assembler" if checks.sweep_subset_of_probe
           else f"{len(checks.sweep_not_in_probe)} disassembled names refused by the assembler")
        + f"; {checks.examples_reassembled} of {measured.canonical_count} examples re-assemble"
        + (f" (the other {len(checks.examples_not_reassembled)} print operands llvm-mc does not accept back as printed: the "
           "instructions are real and stay in the census)"
           if checks.examples_not_reassembled else "")
        + (f"; {len(checks.dropped_groups)} encodings that crash llvm-mc were dropped" if checks.dropped_groups
           else "; llvm-mc did not crash")
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
