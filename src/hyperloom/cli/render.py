"""Plain-text rendering of results for people; `--json` prints the models instead."""

from __future__ import annotations

from collections.abc import Sequence

from hyperloom.core.evidence import Evidence
from hyperloom.tools.gate.models import FreezeResult, GateResult
from hyperloom.tools.isa.models import AuditResult, CensusResult, ProbeResult


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    line = "  ".join("{:<%d}" % w for w in widths)
    out = [line.format(*headers), line.format(*("-" * w for w in widths))]
    out.extend(line.format(*(str(cell) for cell in row)) for row in rows)
    return "\n".join(text.rstrip() for text in out)


def _num(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _value(value: float | int | str) -> str:
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def evidence_line(evidence: Evidence) -> str:
    return (
        f"{evidence.tag.value} by {evidence.source} on {evidence.device}, target {evidence.target}, "
        f"at {evidence.at.isoformat(timespec='seconds')}, inputs sha256 {evidence.inputs_sha256[:16]}…"
    )


def gate_report(result: GateResult) -> str:
    rows = [
        (
            case.name,
            "PASS" if case.passed else "FAIL",
            f"{case.mismatches}/{case.elements}",
            _num(case.max_abs_error),
            _num(case.max_rel_error),
            _num(case.max_ulp),
            f"{case.nan_count.candidate}/{case.nan_count.reference}",
            f"{case.inf_count.candidate}/{case.inf_count.reference}",
        )
        for case in result.cases
    ]
    parts = [
        table(["case", "verdict", "mismatches", "max abs", "max rel", "max ulp", "NaN c/r", "Inf c/r"], rows),
        "",
    ]
    for case in result.cases:
        if case.passed:
            continue
        parts.append(f"{case.name}: {case.reason}")
        for row in case.first_mismatches:
            extra = f"  abs {_num(row.abs_error)}" if row.abs_error is not None else ""
            extra += f"  ulp {row.ulp}" if row.ulp is not None else ""
            parts.append(f"  at {row.index}: candidate {_value(row.candidate)}  reference {_value(row.reference)}{extra}")
    tol = result.tolerance
    parts += [
        f"tolerance: atol={tol.atol:g} rtol={tol.rtol:g} max_ulp={tol.max_ulp} nan_policy={tol.nan_policy}"
        + (f" (frozen in {result.reference_set})" if result.reference_set else ""),
        f"evidence: {evidence_line(result.evidence)}",
        result.summary,
    ]
    return "\n".join(parts)


def freeze_report(result: FreezeResult) -> str:
    tol = result.tolerance
    return "\n".join(
        [
            f"froze {len(result.cases)} reference(s) into {result.reference_set}: {', '.join(result.cases)}",
            f"tolerance: atol={tol.atol:g} rtol={tol.rtol:g} max_ulp={tol.max_ulp} nan_policy={tol.nan_policy}",
            f"manifest sha256: {result.manifest_sha256}",
            f"evidence: {evidence_line(result.evidence)}",
        ]
    )


def census_report(result: CensusResult) -> str:
    parts = [result.summary, ""]
    rows = [(c.name, f"{', '.join(c.proof)}{' …' if c.proof_count > len(c.proof) else ''}") for c in result.capabilities_present]
    parts += [table(["capability", "proved by"], rows), "", f"absent: {', '.join(result.capabilities_absent) or 'none'}", ""]
    if result.instructions:
        rows = [(i.name, i.kind, ",".join(i.families), i.example or "", i.encoding or "", _flag(i.reassembles)) for i in result.instructions]
        parts += [table(["instruction", "kind", "families", "example", "encoding", "re-assembles"], rows), ""]
    if result.compare is not None:
        cmp = result.compare
        parts += [
            f"only in {result.target} ({cmp.only_in_target_count}): {' '.join(cmp.only_in_target)}",
            f"only in {cmp.other} ({cmp.only_in_other_count}): {' '.join(cmp.only_in_other)}",
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
    return "\n".join([table(["line", "verdict", "printed / message", "encoding"], rows), "", result.summary, f"evidence: {evidence_line(result.evidence)}"])


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
