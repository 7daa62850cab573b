"""Reports of the optimize tools: a campaign's status as a table a person can follow, a proposal's fate, the report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import hanging

if TYPE_CHECKING:
    from hyperloom.tools.optimize.models import OptimizeReport, OptimizeStatus, ProposeResult


def status_report(status: OptimizeStatus) -> str:
    gain = f"{status.gain:.3g}x" + (f" [{status.gain_ci95[0]:.3g}-{status.gain_ci95[1]:.3g}]" if status.gain_ci95
                                    else "") if status.gain else "-"
    rows = [("state", status.state), ("phase", status.phase),
            ("candidates", f"{status.candidates} tried, {status.pending_proposals} proposal(s) queued"),
            ("stack", " + ".join(status.stack) or "nothing kept"), ("gain", f"{gain} (MEASURED, whole stack against the baseline)"
                                                                            if status.gain else gain),
            ("budget", f"{status.spent_device_s:.1f} of {status.budget_device_s:g} device-s spent, "
                       f"{max(status.budget_device_s - status.spent_device_s, 0):.1f} left")]
    rows += [("stopped", status.stop_reason)] if status.stop_reason else []
    rows += [("error", status.error)] if status.error else []
    lines = [status.summary] + [f"  {key:11} {value}" for key, value in rows]
    if status.workloads:
        lines += ["", f"  {'session':16} {'state':11} {'baseline':>10} {'gain':>7} {'device-s':>9}  stack"]
        lines += [f"  {r.session:16} {r.state:11} {f'{r.baseline_step_s * 1e3:.3g} ms' if r.baseline_step_s else '-':>10} "
                  f"{f'{r.gain:.3g}x' if r.gain else '-':>7} "
                  f"{r.spent_device_s:9.1f}  {' + '.join(r.stack) or '-'}" for r in status.workloads]
    return "\n".join(lines)


def propose_report(result: ProposeResult) -> str:
    return f"{'accepted' if result.accepted else 'not queued'}: {result.summary} (key {result.key})"


def report_text(report: OptimizeReport) -> str:
    from hyperloom.tools.optimize.report import label, tally

    lines = [status_report(report.status), "", f"  {tally(report.records)}:"] if report.records else [status_report(report.status), ""]
    for r in report.records:
        speed = f" {r.result.speedup:.3g}x" if r.result.speedup else ""
        lines.append(hanging(f"  #{r.seq} {r.phase}: {label(r)}{f' at {r.point}' if r.point else ''}: {r.decision} "
                             f"({r.result.verdict}{speed}) {r.result.reason}", 4))
    lines += [hanging(f"  sweep: {report.sweep_note.note}", 4)] + [hanging(f"  note: {n}", 4) for n in report.notes]
    lines.append(f"  report: {report.report_md}")
    return "\n".join(lines)
