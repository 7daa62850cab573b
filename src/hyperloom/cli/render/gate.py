"""Reports of correctness_gate and gate_freeze."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, exact, num, table

if TYPE_CHECKING:
    from hyperloom.tools.gate.models import CaseVerdict, FreezeResult, GateResult


def _not_compared(case: CaseVerdict) -> str | None:
    """Why a case's elements were never compared (its shapes or dtypes differ), else None."""
    if case.candidate_shape != case.reference_shape:
        return "shapes differ"
    if case.candidate_dtype != case.reference_dtype and case.elements == 0 and not case.passed:
        return "dtypes differ"
    return None


def gate_report(result: GateResult) -> str:
    rows = [
        (case.name, "FAIL", why, "-", "-", "-", "-", "-") if (why := _not_compared(case)) else (
            case.name,
            "PASS" if case.passed else "FAIL",
            f"{case.mismatches}/{case.elements}",
            num(case.max_abs_error),
            num(case.max_rel_error),
            num(case.max_ulp),
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
            extra = f"  abs {num(row.abs_error)}" if row.abs_error is not None else ""
            extra += f"  ulp {row.ulp}" if row.ulp is not None else ""
            parts.append(f"  at {row.index}: candidate {exact(row.candidate)}  reference {exact(row.reference)}{extra}")
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
