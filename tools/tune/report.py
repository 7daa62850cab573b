"""Status, report.md and breakdown.json, all computed from the manifest and the ledger alone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.hashing import sha256_json
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.kernelspec.expr import evaluate_int
from hyperloom.tools.tune.seeds import choice_in
from hyperloom.tools.tune.seeds import render as render_autotune
from hyperloom.tools.tune.ledger import Ledger
from hyperloom.tools.tune.manifest import Manifest
from hyperloom.tools.tune.models import LineageNode, SessionState, TrialRecord, TuneReport, TuneRequest, TuneStatus
from hyperloom.tools.pipeline.phases import PHASES
from hyperloom.tools.tune.phases import run_summary
from hyperloom.tools.tune.session import BREAKDOWN, REPORT

BREAKDOWN_VERSION = 1


def figures(launchable: Launchable, median_s: float | None, roof_gbps: float | None,
            roof_tflops: float | None) -> tuple[float | None, float | None, float | None]:
    """(GB/s, TFLOP/s, % of the given roof) at a median time, from the spec's metric."""
    if not median_s:
        return None, None, None
    metric, shape = launchable.loaded.spec.metric, launchable.shape
    gbps = evaluate_int(metric.bytes, shape, "metric bytes") / median_s / 1e9 if metric.bytes is not None else None
    tflops = evaluate_int(metric.flops, shape, "metric flops") / median_s / 1e12 if metric.flops is not None else None
    shares = [100 * gbps / roof_gbps] if gbps and roof_gbps else []
    shares += [100 * tflops / roof_tflops] if tflops and roof_tflops else []
    return gbps, tflops, max(shares) if shares else None


def status_of(manifest: Manifest, ledger: Ledger, folder: Path, workspace: Workspace, state: SessionState | None = None,
              error: str | None = None) -> TuneStatus:
    trials = ledger.trials()
    request = ledger.request() or TuneRequest.model_validate(manifest.request)
    passed = [t for t in trials if t.status == "PASSED" and t.median_s]
    best = min(passed, key=lambda t: t.median_s, default=None)
    baseline = next((t for t in trials if t.proposer == "baseline"), None)
    spent = ledger.spent_s()
    state = state or ("closed" if ledger.closed_at() else "not running")
    stop = ledger.stop_reason()
    summary = (
        f"{manifest.session}: {state}; {len(trials)} recorded ({len(passed)} passed), "
        + (f"best {best.median_s * 1e6:.2f} us ({f'{best.speedup:.2f}x baseline' if best.speedup else 'the baseline is still running'}) "
           f"{best.params}"
           if best else "no passing candidate yet")
        + f"; {spent:.1f} of {request.budget_device_s:g} device-s spent" + (f"; stopped: {stop}" if stop and state != "running" else "")
    )
    return TuneStatus(
        session=manifest.session, folder=workspace.relative(folder), state=state, summary=summary, recorded=len(trials), passed=len(passed),
        rejected=len(trials) - len(passed), pending_proposals=ledger.pending_proposals(), best=best, baseline=baseline,
        budget_device_s=request.budget_device_s, spent_device_s=spent, budget_left_s=max(request.budget_device_s - spent, 0.0),
        stop_reason=stop, error=error,
    )


def build_report(manifest: Manifest, ledger: Ledger, folder: Path, workspace: Workspace, state: SessionState | None = None) -> TuneReport:
    trials = ledger.trials()
    return TuneReport(
        status=status_of(manifest, ledger, folder, workspace, state),
        leaderboard=sorted((t for t in trials if t.status == "PASSED" and t.median_s), key=lambda t: t.median_s),
        rejected=[t for t in trials if t.status != "PASSED"],
        revalidation=ledger.revalidation(),
        revalidations=ledger.revalidations(),
        sweep=ledger.sweep(),
        autotune=choice_in(ledger, trials),
        lineage=lineage_nodes(ledger, trials),
        report_md=workspace.relative(folder / REPORT), breakdown_json=workspace.relative(folder / BREAKDOWN),
    )


def lineage_nodes(ledger: Ledger, trials: list[TrialRecord]) -> list[LineageNode]:
    """Each source change with its trial's figures and its gains over its parent and the baseline."""
    by_hash = {t.hash: t for t in trials}
    baseline = next((t for t in trials if t.proposer == "baseline"), None)
    nodes = []
    for entry in ledger.lineage().values():
        trial, parent = by_hash.get(entry.hash), by_hash.get(entry.parent)
        median = trial.median_s if trial else None
        nodes.append(LineageNode(
            hash=entry.hash, parent=entry.parent, kind=entry.kind, note=entry.note, source=entry.source, same_as=entry.same_as,
            seq=trial.seq if trial else None, status="NOT_NEW" if entry.same_as else trial.status if trial else "queued", median_s=median,
            gain_over_parent=parent.median_s / median if median and parent and parent.median_s else None,
            gain_over_baseline=baseline.median_s / median if median and baseline and baseline.median_s else None,
        ))
    return sorted(nodes, key=lambda n: (n.seq is None, n.seq or 0, n.hash))


def render_lineage(report: TuneReport) -> list[str]:
    """report.md's lineage tree: the baseline, and under each candidate the changes proposed against it."""
    if not report.lineage:
        return []
    trials = {t.hash: t for t in report.leaderboard + report.rejected}
    children: dict[str, list[LineageNode]] = {}
    for node in report.lineage:
        children.setdefault(node.parent, []).append(node)
    baseline = next((t for t in trials.values() if t.proposer == "baseline"), None)
    lines = ["", "## Lineage of source changes", "",
             f"- baseline{f' #{baseline.seq}: {_us(baseline.median_s)} us' if baseline else ''}"]

    def walk(parent: str, depth: int) -> None:
        for node in children.get(parent, []):
            label = f"#{node.seq} " if node.seq else ""
            if node.status == "NOT_NEW":
                said = f"not new: builds to the same code object as {_seq(trials, node.same_as)}"
            elif node.median_s:
                said = (f"{node.status} {_us(node.median_s)} us, {_num(node.gain_over_parent, '{:.3f}x')} over its parent, "
                        f"{_num(node.gain_over_baseline, '{:.3f}x')} over the baseline")
            else:
                trial = trials.get(node.hash)
                said = f"{node.status}" + (f" at {trial.input_set}: {trial.reason[:160]}" if trial and trial.reason else "")
            lines.append(f"{'  ' * depth}- {label}{node.kind} `{node.source.rsplit('/', 1)[-1][:20]}` ({node.note or 'no note'}): {said}")
            walk(node.hash, depth + 1)

    roots = {node.parent for node in report.lineage} - {node.hash for node in report.lineage}
    for root in sorted(roots, key=lambda h: (baseline is None or h != baseline.hash, h)):
        walk(root, 1)
    return lines


def _seq(trials: dict[str, TrialRecord], digest: str | None) -> str:
    trial = trials.get(digest or "")
    return f"#{trial.seq}" if trial else (digest or "?")[:16]


def close_session(folder: Path, manifest: Manifest, ledger: Ledger, workspace: Workspace) -> TuneReport:
    """Write report.md and breakdown.json and mark the session closed; closing again rewrites the same files."""
    if not ledger.closed_at():
        ledger.set_closed_at(max((t.finished_at for t in ledger.trials()), default=manifest.created_at))
    ledger.set_state("closed")
    report = build_report(manifest, ledger, folder, workspace, "closed")
    run = run_summary(sorted(report.leaderboard + report.rejected, key=lambda t: t.seq), ledger.runs())
    write_bytes_atomic(folder / BREAKDOWN, json.dumps(breakdown(manifest, report, run), indent=2, sort_keys=True).encode() + b"\n")
    write_bytes_atomic(folder / REPORT, render_markdown(manifest, report, run).encode())
    return report


def breakdown(manifest: Manifest, report: TuneReport, run: dict[str, Any] | None = None) -> dict[str, Any]:
    status = report.status
    body = {
        "kind": "hyperloom.tune.breakdown", "format_version": BREAKDOWN_VERSION, "session": status.session,
        "spec": manifest.spec, "variant": manifest.variant, "target": manifest.target, "shape": manifest.shape,
        "input_set_sha256": manifest.input_set_sha256, "stop_reason": status.stop_reason,
        "budget": {"device_s": status.budget_device_s, "spent_device_s": status.spent_device_s},
        "counts": dict(Counter(t.status for t in report.leaderboard + report.rejected)),
        "baseline": status.baseline.model_dump() if status.baseline else None,
        "best": status.best.model_dump() if status.best else None,
        "trials": [t.model_dump() for t in sorted(report.leaderboard + report.rejected, key=lambda t: t.seq)],
        "revalidation": report.revalidation.model_dump() if report.revalidation else None,
        "revalidations": [r.model_dump() for r in report.revalidations],
        "sweep": [s.model_dump() for s in report.sweep],
        "run": run if run is not None else run_summary([], []),
    }
    body["content_sha256"] = sha256_json(body)
    return body


def _us(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1e6:.2f}"


def _num(value: float | None, form: str) -> str:
    return "–" if value is None else form.format(value)


def render_markdown(manifest: Manifest, report: TuneReport, run: dict[str, Any] | None = None) -> str:
    status = report.status
    lines = [
        f"# tune {status.session}", "",
        f"Spec `{manifest.spec}`, variant `{manifest.variant}`"
        + (f" (the baseline; also searched: {', '.join(f'`{v}`' for v in manifest.variant_defines)})" if manifest.variant_defines else "")
        + f", target `{manifest.target}`, shape {manifest.shape}; "
        f"tolerance {manifest.tolerance} declared before the first trial; input sets {', '.join(manifest.input_sets)} "
        f"(sha256 {manifest.input_set_sha256[:16]}…). All times MEASURED on "
        f"{manifest.environment['device'] if manifest.target == 'host' else manifest.target}.",
        "", f"Stopped: {status.stop_reason or 'not stopped'}. Budget: {status.spent_device_s:.1f} of {status.budget_device_s:g} "
            "device-seconds spent.",
        "", "## Leaderboard", "", "| # | params | median (us) | speedup vs baseline | GB/s | TFLOP/s | % of roof | proposer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in report.leaderboard:
        cells = [str(t.seq), f"`{t.params or 'baseline'}`", _us(t.median_s), _num(t.speedup, "{:.3f}x"), _num(t.bandwidth_gbps, "{:.1f}"),
                 _num(t.tflops, "{:.3f}"), _num(t.roof_pct, "{:.1f}"), t.proposer]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Rejected", ""]
    lines += [f"- #{t.seq} `{t.params or 'baseline'}`: **{t.status}** at {t.input_set}: {t.reason}" for t in report.rejected] or ["None."]
    lines += render_autotune(report.autotune)
    lines += render_lineage(report)
    lines += ["", "## Winner re-validation", ""]
    if not report.revalidations and report.revalidation is None:
        lines.append("Not run (no passing candidate beat the baseline, or no baseline passed).")
    else:
        lines += ["Interleaved pairs (baseline, winner; the order alternates) on each device the session used.", "",
                  "| device | pairs | speedup | winner faster | sign-test p | verdict |", "|---|---|---|---|---|---|"]
        for r in report.revalidations or [report.revalidation]:  # type: ignore[list-item]
            lines.append(f"| {r.device or '–'} | {r.pairs} | {_num(r.speedup, '{:.3f}x')} | {r.winner_faster}/{r.pairs} | "
                         f"{_num(r.sign_test_p, '{:.3f}')} | {'beyond noise' if r.beyond_noise else 'NOT beyond noise'} |")
    if report.sweep:
        lines += ["", "## Shape sweep", "",
                  "Winner and baseline gated, then timed in interleaved pairs, at every shape on every device; a regression only when the "
                  "winner is slower in enough pairs for sign-test p < 0.05 and by more than 2 % at the median, in a first round of pairs "
                  "and again in a second round of fresh pairs (the counts are the first round's).", "",
                  "| shape | device | baseline (us) | winner (us) | speedup | winner slower | p | regression |",
                  "|---|---|---|---|---|---|---|---|"]
        for s in report.sweep:
            slower = f"{s.winner_slower}/{s.pairs}" if s.pairs else "–"
            lines.append(f"| {s.shape} | {s.device or '–'} | {_us(s.baseline_s)} | {_us(s.winner_s)} | "
                         f"{'–' if s.speedup is None else f'{s.speedup:.3f}x'} | "
                         f"{slower} | {_num(s.slower_p, '{:.3f}')} | {'YES' if s.regression else 'no'}{' ' + s.note if s.note else ''} |")
    if run is not None and run.get("candidates"):
        lines += ["", *_where_the_time_went(run)]
    return "\n".join(lines) + "\n"


def _where_the_time_went(run: dict[str, Any]) -> list[str]:
    """The phase breakdown: what the candidates' time was spent on, per device, and what the worker processes cost."""
    total = sum(run["phases_s"].values()) or 1.0
    lines = ["## Where the time went", "",
             f"{run['candidates']} candidates in {run['loop_wall_s']:.1f} s of search ({_num(run['candidates_per_hour'], '{:.0f}')} "
             "candidates per hour); "
             f"worker mode {run['worker_mode']}, compile ahead {run['compile_ahead']}, devices {', '.join(run['slots']) or '–'}. "
             "Candidates overlap (compiles run ahead; devices run at once), so phase sums can exceed the wall time.", "",
             "| phase | total (s) | per candidate (ms) | share |", "|---|---|---|---|"]
    for phase in PHASES:
        seconds = run["phases_s"].get(phase, 0.0)
        lines.append(f"| {phase} | {seconds:.2f} | {run['phases_per_candidate_s'].get(phase, 0.0) * 1e3:.1f} | {seconds / total:.1%} |")
    lines += ["", "| device | candidates | passed | busy (s) | busy share of the wall time |", "|---|---|---|---|---|"]
    for d in run["devices"]:
        lines.append(f"| {d['device']} | {d['candidates']} | {d['passed']} | {d['busy_s']:.2f} | {_num(d['busy_share'], '{:.0%}')} |")
    for index, workers in enumerate(run["workers"]):
        if workers:
            replaced = ", ".join(f"{n} after {why}" for why, n in workers.get("replaced", {}).items()) or "none"
            lines.append(f"\nRun {index + 1}: {workers.get('launches', 0)} launches in {workers.get('processes_started', 0)} "
                         "worker processes "
                         f"({workers.get('worker_mode')}; {workers.get('start_s', 0.0):.2f} s starting warm ones); replaced: {replaced}.")
    return lines
