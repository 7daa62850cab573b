"""Reports of the tune tools: a session's status, a proposal's answer, the leaderboard."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperloom.tools.tune.models import ProposeResult, TuneReport, TuneStatus


def status_report(status: TuneStatus) -> str:
    lines = [status.summary, f"  folder: {status.folder}",
             f"  {status.passed} passed, {status.rejected} rejected, {status.pending_proposals} proposal(s) queued; "
             f"{status.budget_left_s:.1f} device-s left"]
    if status.error:
        lines.append(f"  error: {status.error}")
    return "\n".join(lines)


def propose_report(result: ProposeResult) -> str:
    return f"{'' if result.accepted else 'refused: '}{result.summary} (candidate {result.hash[:16]})"


def tune_report(report: TuneReport) -> str:
    lines = [report.status.summary, f"report: {report.report_md}"]
    lines += [f"  #{t.seq} {t.params or 'baseline'}: {t.median_s * 1e6:.2f} us ({t.speedup or 1:.3f}x)" for t in report.leaderboard[:10]]
    lines += [f"  #{t.seq} {t.params or 'baseline'}: {t.status} at {t.input_set}" for t in report.rejected]
    return "\n".join(lines)
