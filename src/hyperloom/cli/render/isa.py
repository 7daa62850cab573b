"""Reports of isa_census, isa_probe and isa_audit, in the CLI's terms (flags, not MCP arguments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, table

if TYPE_CHECKING:
    from hyperloom.tools.isa.models import AuditResult, CensusResult, ProbeResult


CENSUS_LISTING_HINT = "List instructions with --detail, or --match dot8 (any part of a name); page with --offset N and --limit N."


def census_report(result: CensusResult) -> str:
    from hyperloom.tools.isa.summary import LISTING_HINT

    summary = result.summary.removesuffix(LISTING_HINT) + CENSUS_LISTING_HINT if result.summary.endswith(LISTING_HINT) else result.summary
    parts = [summary, ""]
    if result.capabilities_present or result.capabilities_absent:  # a page of a listing leaves them to the summary answer
        rows = [(c.name, f"{', '.join(c.proof)}{' …' if c.proof_count > len(c.proof) else ''}") for c in result.capabilities_present]
        parts += [table(["capability", "proved by"], rows), "", f"absent: {', '.join(result.capabilities_absent) or 'none'}", ""]
    if result.instructions:
        rows = [(i.name, i.kind, ",".join(i.families), i.example or "", i.encoding or "", _flag(i.reassembles))
                for i in result.instructions]
        parts += [table(["instruction", "kind", "families", "example", "encoding", "re-assembles"], rows), ""]
    if result.compare is not None:
        cmp = result.compare
        parts += [
            f"only in {result.target} ({cmp.only_in_target_count}): {' '.join(cmp.only_in_target)}",
            f"only in {cmp.other} ({cmp.only_in_other_count}): {' '.join(cmp.only_in_other)}",
            f"renamed ({cmp.renamed_count}, {result.target} = {cmp.other}): {' '.join(f'{a}={b}' for a, b in cmp.renamed)}",
            "",
        ]
    if result.next_offset is not None:
        parts.append(f"more: --offset {result.next_offset}")
    parts += [f"evidence: {evidence_line(result.evidence)}{' (from the cache)' if result.from_cache else ''}", result.version_note]
    return "\n".join(parts)


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def probe_report(result: ProbeResult) -> str:
    rows = [
        (line.line, "accepted" if line.accepted else line.error_class or "", line.printed or line.message or "", line.encoding or "")
        for line in result.lines
    ]
    return "\n".join([table(["line", "verdict", "printed / message", "encoding"], rows), "", result.summary,
                      f"evidence: {evidence_line(result.evidence)}"])


def audit_report(result: AuditResult) -> str:
    rows = [
        (c.name, "used" if c.used else "UNUSED", ", ".join(c.used_instructions or c.available), ", ".join(c.kernels))
        for c in result.capabilities
    ]
    parts = [table(["capability", "verdict", "instructions (used, or available)", "kernels"], rows), ""]
    parts += [f"skipped: {item}" for item in result.skipped]
    if result.not_in_census:
        parts.append(f"in the code objects but not in the census: {', '.join(result.not_in_census)}")
    parts += [result.summary, f"evidence: {evidence_line(result.evidence)}"]
    return "\n".join(parts)
