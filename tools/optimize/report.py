"""A campaign's status and its close: report.md, breakdown.json (validators/optimize_breakdown.schema.json) and
campaign.png, all computed from the ledger alone, so closing again (after a stop, a budget, a resume) writes the same."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.evidence import Evidence
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.models import OptimizeReport, OptimizeRequest, OptimizeStatus, Phase, Record, State, SweepNote, stack_of
from hyperloom.tools.workload.ab import same_work_note
from hyperloom.tools.workload.models import CandidateResult
from hyperloom.tools.workload.plot import NO_PLOT, Bar, can_plot, speedup_bars
from hyperloom.tools.workload.report import cell
from hyperloom.tools.optimize.session import Session

REPORT, BREAKDOWN, PLOT = "report.md", "breakdown.json", "campaign.png"


def pass_note(stored: dict) -> str:
    """How a pass over several workloads ran, from its pass.json."""
    if stored.get("ray"):
        return (f"the {len(stored['workloads'])} workloads ran as Ray tasks (ray: {stored['ray']}), one campaign each, on the "
                "GPU Ray gave it")
    return (f"the {len(stored['workloads'])} workloads ran one after another in this process (ray: local, or a cluster's address, spreads "
            "them with Ray)")


def _unproven(result: CandidateResult | None) -> str:
    """What a kept stack's last revalidation did not establish: empty when it was FASTER (beyond the noise band)."""
    if result is None or result.verdict == "FASTER":
        return ""
    return f": {result.verdict}, not beyond the noise band: the gain is not established"


def _last_revalidation(records: list[Record], stack: list[str]) -> CandidateResult | None:
    found = [r for r in records if r.phase == "revalidate" and r.decision == "MEASURED" and r.result.levers == stack]
    return found[-1].result if found and stack else None


def status_of(session: Session, workspace: Workspace, state: State | None = None, error: str | None = None) -> OptimizeStatus:
    ledger = session.ledger
    records = ledger.records()
    request = OptimizeRequest.model_validate(ledger.get_json("request", {"session": session.name}))
    stack = stack_of(records)
    last = _last_revalidation(records, stack)
    baseline = ledger.get_json("baseline", None)
    base_s = baseline["stats"]["median_s"] if baseline else None
    tried = candidates_tried(records)
    state = state or ("closed" if ledger.get("closed_at") else "stopped" if ledger.get("stop_reason") else "not running")
    phase: Phase = "closed" if state == "closed" else ledger.get("phase") or "baseline"  # type: ignore[assignment]
    spent, parts = ledger.spent_s(), ledger.spent_parts_s()
    stop = ledger.get("stop_reason")
    summary = (f"{session.name}: {state}, phase {phase}; {len(tried)} candidate(s) tried; "
               + (f"stack {' + '.join(stack)} {last.speedup:.3g}x the baseline (MEASURED, revalidated{_unproven(last)})" if last
                  and last.speedup else f"stack {' + '.join(stack)} (not revalidated yet)" if stack else "nothing kept")
               + (f"; baseline {base_s * 1e3:.3g} ms/step" if base_s else "")
               + f"; {spent:.1f} of {request.budget_device_s:g} device-s spent"
               + (f" ({pace(len(tried), spent)}; {served(tried)})" if tried else "") + (f"; by part: {by_part(parts)}" if parts else "")
               + (f"; stopped: {stop}" if stop and state != "running" else ""))
    return OptimizeStatus(session=session.name, workload=session.frozen.target.workload, folder=workspace.relative(session.folder),
                          state=state, phase=phase, summary=summary,
                          candidates=len(tried), pending_proposals=len(ledger.queued()), stack=stack, gain=last.speedup if last else None,
                          gain_ci95=last.speedup_ci95 if last else None, baseline_step_s=base_s, budget_device_s=request.budget_device_s,
                          baseline_inputs_step_s=baseline.get("inputs_step_s") if baseline else None,
                          spent_device_s=spent, spent_by_part_s=parts, stop_reason=stop, error=error)


def candidates_tried(records: list[Record]) -> list[Record]:
    """The candidates the campaign ran (levers, combinations, proposals): what "N candidate(s) tried" counts."""
    return [r for r in records if r.phase in ("levers", "combine", "kernels") and r.device_s > 0]


def tally(records: list[Record]) -> str:
    """What the records are, counted by kind, so a count above a list of them agrees with its rows."""
    tried = len(candidates_tried(records))
    kinds = [(sum(r.phase == "baseline" for r in records), "A/A (a reference against its own work)"),
             (sum(r.phase in ("levers", "combine", "kernels") and r.device_s == 0 for r in records),
              "not run alone (a need the baseline lacks)"),
             (sum(r.phase == "revalidate" for r in records), "whole-stack revalidation(s)"),
             (sum(r.phase == "sweep" for r in records), "sweep point(s)")]
    return f"{len(records)} measurement(s) recorded: {tried} candidate(s) tried" + "".join(f", {n} {what}" for n, what in kinds if n)


def label(r: Record) -> str:
    """What a record measured, never empty: its levers, or for an A/A the reference against itself."""
    levers = " + ".join(r.result.levers)
    return f"A/A: {levers or 'the baseline'} against itself" if r.phase == "baseline" else levers or "the baseline"


def pace(candidates: int, spent_s: float) -> str:
    """The campaign's cost per candidate: every device-second spent (the baseline, the A/A, reference builds,
    revalidations included) over the candidates timed or refused, and what that makes an hour."""
    each_s = spent_s / candidates
    return (f"{each_s:.0f} device-s a candidate, all costs shared, {3600 / each_s:.0f} candidates per "
            "device-hour") if each_s > 0 else "no device time"


def by_part(parts: dict[str, float]) -> str:
    """Where the device time went (ledger.PARTS), largest first."""
    return ", ".join(f"{name} {seconds:.0f} s" for name, seconds in sorted(parts.items(), key=lambda item: -item[1]))


def served(tried: list[Record]) -> str:
    """How many candidates a kept worker served a copy of the workload (no build of their own: tools/workload/spare.py)."""
    return f"{sum(1 for r in tried if r.result.worker_turn > 1)} of {len(tried)} served by a kept worker, not built again"


def build_report(session: Session, workspace: Workspace, state: State | None = None, error: str | None = None) -> OptimizeReport:
    ledger = session.ledger
    records = ledger.records()
    baseline = ledger.get_json("baseline", None)
    points = baseline.get("points", []) if baseline else []
    status = status_of(session, workspace, state, error)
    swept = final_points_swept(records, status.stack)
    earlier = sum(1 for r in records if r.phase == "sweep") - swept
    note = ("the workload declares no points (a `points` attribute: a list of knob dicts); nothing swept" if not points
            else "nothing kept: the baseline is the final stack, nothing to sweep" if not status.stack
            else f"{swept} of {len(points)} declared point(s) swept with the final stack"
            + ("" if swept == len(points) else " (the rest skipped or not reached: see notes)")
            + (f"; {earlier} sweep(s) of an earlier stack, kept below for the record" if earlier else ""))
    return OptimizeReport(
        status=status, records=records, sweep_note=SweepNote(declared=len(points), swept=swept, note=note),
        notes=ledger.get_json("notes", []), evidence=Evidence.model_validate(baseline["evidence"]) if baseline else None,
        report_md=workspace.relative(session.folder / REPORT), breakdown_json=workspace.relative(session.folder / BREAKDOWN), plot=None)


def close(session: Session, workspace: Workspace, error: str | None = None) -> OptimizeReport:
    """Write report.md, breakdown.json and the plot; mark the session closed. Idempotent."""
    if not session.ledger.get("closed_at"):
        session.ledger.set("closed_at", dt.datetime.now(dt.timezone.utc).isoformat())
    report = build_report(session, workspace, "closed", error)
    plot = _plot(report, session.folder / PLOT)
    report = report.model_copy(update={"plot": workspace.relative(plot) if plot else None})
    write_bytes_atomic(session.folder / BREAKDOWN, report.model_dump_json(indent=2).encode() + b"\n")
    write_bytes_atomic(session.folder / REPORT, markdown(report).encode())
    return report


def _speed(r: Record) -> str:
    ci = f" [{r.result.speedup_ci95[0]:.3g}-{r.result.speedup_ci95[1]:.3g}]" if r.result.speedup_ci95 else ""
    return f"{r.result.speedup:.3g}x{ci}" if r.result.speedup else "-"


def markdown(report: OptimizeReport) -> str:
    s = report.status
    candidates, revalidations, sweep = _split(report.records)
    lines = [f"# Optimize {s.session}: {s.workload}", ""]
    if report.evidence is not None:
        e = report.evidence
        lines += [f"{e.tag.value} by {e.source} on {e.device} ({e.target}), {e.at:%Y-%m-%d %H:%M} UTC; "
                  + ", ".join(f"{k} {v}" for k, v in e.toolchain.items()) + ".", ""]
    lines += [s.summary, ""]
    if s.baseline_step_s:
        inputs = f"; inputs(seed) {s.baseline_inputs_step_s * 1e3:.3g} ms a step outside it" if s.baseline_inputs_step_s is not None else ""
        lines += [f"Baseline: {s.baseline_step_s * 1e3:.4g} ms per step (median of its legs alone, MEASURED: its timed windows, step() and "
                  f"outputs(){inputs}).", ""]
    same = next((r for r in report.records if r.phase == "baseline" and not r.reference and r.result.speedup is not None), None)
    if same is not None:
        band = max(OptimizeRequest.noise_band, abs(same.result.speedup - 1.0))
        lines += [f"Noise band (A/A against the baseline, #{same.seq}): {same_work_note(same.result, band, s.baseline_step_s)}.", ""]
    unproven = _unproven(_last_revalidation(report.records, s.stack))
    lines += ["## Final stack", "",
              (f"{' + '.join(s.stack)}: **{s.gain:.3g}x** the baseline end to end"
               + (f" (95 % interval {s.gain_ci95[0]:.3g}-{s.gain_ci95[1]:.3g})" if s.gain_ci95 else "")
               + f", MEASURED as one candidate against the pure baseline, interleaved{unproven}." if s.gain else
               f"{' + '.join(s.stack)} (not revalidated)" if s.stack else "Nothing kept: no candidate was measured faster and gated."), ""]
    lines += ["## Candidates", "", tally(report.records) + ".", "",
              "| # | phase | levers | against | decision | verdict | speedup [95 %] | device-s | why |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(r) for r in candidates]
    if revalidations:
        lines += ["", "## Whole-stack revalidations (after each keep)", "",
                  "| # | stack | decision | verdict | speedup [95 %] | device-s | why |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r.seq} | {' + '.join(r.result.levers)} | {r.decision} | {r.result.verdict} | {_speed(r)} | {r.device_s:.1f} | "
                  f"{_why(r)} |" for r in revalidations]
    lines += ["", "## Sweep", "", report.sweep_note.note + "."]
    if sweep:
        lines += ["", "| # | point | stack | decision | verdict | speedup [95 %] | why |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r.seq} | {r.point} | {' + '.join(r.result.levers) if r.result.levers != s.stack else 'the final stack'} | "
                  f"{r.decision} | {r.result.verdict} | {_speed(r)} | {_why(r)} |" for r in sweep]
    lines += ["", "## Budget and stop", "",
              f"{s.spent_device_s:.1f} of {s.budget_device_s:g} device-s spent (MEASURED: the wall time workers held a device). "
              f"Stopped: {s.stop_reason or '-'}."]
    notes = report.notes + ([NO_PLOT.replace("speedup.png", "campaign.png")] if report.plot is None and not can_plot() else [])
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines).rstrip() + "\n"


def final_points_swept(records: list[Record], stack: list[str]) -> int:
    """How many distinct points the final stack was swept at: a campaign resumed after another keep sweeps its new stack
    again, and the earlier stack's sweeps do not count for it (docs/decisions.md: Rivals, a pending revalidation, an
    unsteady stack, the sweep's room)."""
    return len({tuple(sorted((r.point or {}).items())) for r in records if r.phase == "sweep" and r.result.levers == stack})


def _split(records: list[Record]) -> tuple[list[Record], list[Record], list[Record]]:
    """(candidates, revalidations, sweep points), each in order."""
    return ([r for r in records if r.phase not in ("revalidate", "sweep")], [r for r in records if r.phase == "revalidate"],
            [r for r in records if r.phase == "sweep"])


def _why(r: Record) -> str:
    return cell(r.result.reason)


def _row(r: Record) -> str:
    return (f"| {r.seq} | {r.phase} | {label(r)} | {' + '.join(r.reference) or 'baseline'} | {r.decision} | {r.result.verdict} | "
            f"{_speed(r)} | {r.device_s:.1f} | {_why(r)} |")


def _plot(report: OptimizeReport, path: Path) -> Path | None:
    bars = [Bar(f"#{r.seq} {r.phase}: {' + '.join(r.result.levers)}"[:60], r.result.speedup, r.result.speedup_ci95,
                "tab:blue" if r.phase == "revalidate" else "tab:green" if r.decision in ("KEEP", "WINNER") else "tab:gray")
            for r in report.records if r.result.speedup and r.phase != "sweep"]
    return speedup_bars(bars, f"{report.status.session}: {report.status.workload}",
                        "speedup over its reference (blue: the whole stack over the baseline), 95 % interval", path, top_down=True)
