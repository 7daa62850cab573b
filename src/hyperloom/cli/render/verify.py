"""Report of disasm_verify: per-kernel histograms, one row per rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, table

if TYPE_CHECKING:
    from hyperloom.tools.verify.models import VerifyResult


def verify_report(result: VerifyResult) -> str:
    parts = [f"{result.code_object} ({', '.join(result.targets)})"]
    for kernel in result.kernels:
        top = ", ".join(f"{c.mnemonic} {c.count}" for c in kernel.histogram[:8])
        parts.append(f"  {kernel.name}: {kernel.instructions} instructions; top: {top}")
    rows = [
        (v.kernel, v.kind, v.rule, "PASS" if v.passed else "FAIL", str(v.found), v.requirement, ", ".join(v.matched[:3]))
        for v in result.verdicts
    ]
    if rows:
        parts += ["", table(["kernel", "kind", "rule", "verdict", "found", "requires", "matched"], rows)]
    for v in result.verdicts:
        if v.note and (not v.passed or v.kind != "spills"):
            parts.append(f"  {v.kernel} / {v.rule}: {v.note}")
        if not v.passed:
            parts.extend(f"    {line}" for line in v.lines)
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)
