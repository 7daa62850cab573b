"""The optimize tools as plain functions (one MCP tool `optimize`, action start|status|propose|stop|report).

optimize_start runs the campaign in a background thread of this process (it outlives the MCP call that started it);
the others read and steer it through its ledger, so they work on a campaign another process runs too. A list of
workload_list is a pass: one campaign each, sessions NAME.0, NAME.1, ..., one after another, or as Ray tasks with ray
(local, or a cluster's address: spread.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from hyperloom.core.background import Runs
from hyperloom.core.errors import HyperloomError
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shorten import at_clause
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.stops import Control
from hyperloom.tools.optimize.keys import conflict, measurement_key, stacked
from hyperloom.tools.optimize.models import (OptimizeProposeRequest, OptimizeRef, OptimizeReport, OptimizeRequest, OptimizeStatus,
                                             ProposeResult, SweepNote, WorkloadRow, stack_of)
from hyperloom.tools.optimize.report import build_report, close, pass_note, status_of
from hyperloom.tools.optimize.one_campaign import run_campaign
from hyperloom.tools.optimize.spread import spread
from hyperloom.tools.optimize.session import MANIFEST, Session, default_name, folder_of, open_existing, read_pass, write_pass
from hyperloom.tools.workload.levers import prepared

OPEN_TIMEOUT_S = 3600.0  # a freeze runs the baseline twice before the campaign opens


RUNS = Runs("optimize session")  # by session name (a pass's too)


def run_pass(request: OptimizeRequest, workspace: Workspace, progress: ProgressFn | None = None,
             control: Control | None = None) -> list[str]:
    """One campaign per workload, in turn; a workload that cannot be opened is recorded and the pass goes on."""
    control = control or Control()
    name = request.session or "pass"
    folder = folder_of(name, workspace)
    if (folder / MANIFEST).is_file():
        raise HyperloomError(f"{name!r} is a campaign over one workload", "name the pass another session")
    members = [f"{name}.{index}" for index in range(len(request.workload_list))]
    stored = read_pass(folder)
    if stored is not None and stored["workloads"] != request.workload_list:
        raise HyperloomError(f"pass {name!r} was started over other workloads", "start it with the same workloads, or name another pass")
    folder.mkdir(parents=True, exist_ok=True)
    errors: dict[str, str] = dict(stored.get("errors", {})) if stored else {}
    write_pass(folder, members, request.workload_list, errors, request.ray)
    jobs = [(member, request.model_copy(update={"workload": workload, "workload_list": [], "ray": None, "session": member}))
            for member, workload in zip(members, request.workload_list, strict=True)]
    ended = spread(request.ray, jobs, workspace, control) if request.ray else _in_turn(jobs, workspace, progress, control)
    for member, error in ended:
        if error is None:
            errors.pop(member, None)
        else:
            errors[member] = error
        write_pass(folder, members, request.workload_list, errors, request.ray)
    return members


def _in_turn(jobs: list[tuple[str, OptimizeRequest]], workspace: Workspace, progress: ProgressFn | None,
             control: Control) -> Iterator[tuple[str, str | None]]:
    """Each campaign in this process, one after another: (member, its refusal or None) as each ends."""
    for member, one in jobs:
        if control.stop.is_set():
            return
        try:
            run_campaign(one, workspace, progress, Control(stop=control.stop, opened=control.opened))
            yield member, None
        except HyperloomError as exc:
            control.opened.set()
            yield member, str(exc)


def optimize_start(request: OptimizeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> OptimizeStatus:
    """Start or resume a campaign (or a pass over several workloads) in the background; returns once it opened (after
    the freeze). run_campaign and run_pass run one to its end (the CLI's foreground)."""
    del progress
    name = request.session or (default_name(request.workload) if request.workload else "pass")
    request = request.model_copy(update={"session": name})
    RUNS.refuse_if_running(name, "optimize")
    control = Control()
    body = (lambda: run_pass(request, workspace, None,
                             control)) if request.workload_list else (lambda: run_campaign(request, workspace, None, control))
    run = RUNS.launch(control, body, f"optimize-{name}")
    RUNS.register(name, run)  # before it opens: status sees it running during the freeze
    control.opened.wait(OPEN_TIMEOUT_S)
    if isinstance(run.failure, HyperloomError):
        raise run.failure
    if run.failure is not None:
        raise HyperloomError(f"the campaign did not open: {run.error}", "check the workload with workload freeze first")
    return optimize_status(OptimizeRef(session=name), workspace)


def optimize_status(request: OptimizeRef, workspace: Workspace, progress: ProgressFn | None = None) -> OptimizeStatus:
    del progress
    stored = read_pass(folder_of(request.session, workspace))
    if stored is not None:
        return _pass_status(request.session, stored, workspace)
    with open_existing(request.session, workspace) as session:
        return status_of(session, workspace, _state(session), _error(session.name))


def optimize_propose(request: OptimizeProposeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> ProposeResult:
    """Queue levers to try on top of the kept stack (kernel overrides included); one that does not apply is refused now."""
    del progress
    with open_existing(request.session, workspace) as session:
        records = session.ledger.records()
        stack = stack_of(records)
        candidate = stacked(stack, request.levers)
        # an overrides file outside the workspace or missing: refused now
        prepared(candidate, session.frozen.vendor, session.frozen.declared_knobs, workspace)
        new = [n for n in candidate if n not in stack]
        key = measurement_key("candidate", stack, candidate, None, workspace)
        if not new:
            return ProposeResult(accepted=False, key=key, summary=f"every lever is on the kept stack already ({' + '.join(stack)})")
        why = conflict(stack, new)
        if why is not None:
            raise HyperloomError(f"{' + '.join(request.levers)} cannot go on the stack {' + '.join(stack) or '(empty)'}: {why}",
                                 "propose other levers")
        earlier = next((r for r in records if r.key == key), None)
        if earlier is not None:
            return ProposeResult(accepted=False, key=key,
                                 summary=f"measured as #{earlier.seq}: {earlier.decision} ({earlier.result.verdict}) "
                                  + at_clause(earlier.result.reason, 160, "its record: optimize report"))
        if any(sorted(levers) == sorted(request.levers) for _, levers, _ in session.ledger.queued()):
            return ProposeResult(accepted=False, key=key, summary="already queued")
        session.ledger.propose(request.levers, request.note)
        running = _state(session) == "running"
        return ProposeResult(accepted=True, key=key, summary="queued; " + ("the running campaign takes it in its kernel phase (give it "
                                                                           "proposal_wait_s to wait for proposals)"
                                                                          if running
                                                                           else "it runs when the campaign resumes (optimize start with "
                                                                                "this session)"))


def optimize_stop(request: OptimizeRef, workspace: Workspace, progress: ProgressFn | None = None) -> OptimizeStatus:
    """Ask the campaign to stop: nothing new starts, the measurement in flight is recorded, the report is written."""
    del progress
    stored = read_pass(folder_of(request.session, workspace))
    run = RUNS.get(request.session)
    if run is not None:
        run.control.stop.set()
    if stored is not None:
        for member in stored["members"]:
            if (folder_of(member, workspace) / MANIFEST).is_file():
                optimize_stop(OptimizeRef(session=member), workspace)
        if run is not None and run.thread is not None:
            run.thread.join(timeout=5.0)
        return _pass_status(request.session, stored, workspace)
    with open_existing(request.session, workspace) as session:
        session.ledger.set("stop_requested", "1")
        if run is not None and run.thread is not None:
            run.thread.join(timeout=5.0)
        if _state(session) == "running":
            return status_of(session, workspace,
                             "running").model_copy(update={"summary": f"{session.name}: stopping after the measurement in flight"})
        if not session.ledger.get("stop_reason"):
            session.ledger.set("stop_reason", "stopped on request (optimize stop)")
        return close(session, workspace).status


def optimize_report(request: OptimizeRef, workspace: Workspace, progress: ProgressFn | None = None) -> OptimizeReport:
    """Every measurement with its verdict and reason, the stack and its measured gain; writes report.md once not running."""
    del progress
    stored = read_pass(folder_of(request.session, workspace))
    if stored is not None:
        status = _pass_status(request.session, stored, workspace)
        return OptimizeReport(status=status, records=[],
                              sweep_note=SweepNote(declared=0, swept=0, note="each workload's sweep is in its own session"),
                              notes=[pass_note(stored), *(f"{m}: {e}" for m, e in stored.get("errors", {}).items())], evidence=None,
                              report_md="", breakdown_json="", plot=None)
    with open_existing(request.session, workspace) as session:
        if _state(session) == "running":
            return build_report(session, workspace, "running", _error(session.name))
        return close(session, workspace, _error(session.name))


def _state(session: Session) -> str | None:
    """running: in this process's thread, or in another live process that holds it; else None (the ledger says)."""
    if RUNS.running(session.name):
        return "running"
    pid = session.ledger.get("pid")
    if session.ledger.get("state") == "running" and pid and int(pid) != os.getpid():
        try:
            os.kill(int(pid), 0)
            return "running"
        except OSError:
            return None  # killed mid-run: resumable with optimize start
    return None


def _error(name: str) -> str | None:
    run = RUNS.get(name)
    return run.error if run is not None else None


def _pass_status(name: str, stored: dict, workspace: Workspace) -> OptimizeStatus:
    rows, spent, budget, tried, phases = [], 0.0, 0.0, 0, []
    for member, workload in zip(stored["members"], stored["workloads"], strict=True):
        if not (folder_of(member, workspace) / MANIFEST).is_file():
            rows.append(WorkloadRow(session=member, workload=workload, state="not running", baseline_step_s=None, stack=[], gain=None,
                                    spent_device_s=0.0, stop_reason=stored.get("errors", {}).get(member, "not started")))
            continue
        with open_existing(member, workspace) as session:
            status = status_of(session, workspace, _state(session))
        spent, budget, tried = spent + status.spent_device_s, status.budget_device_s, tried + status.candidates
        phases += [status.phase] if status.state == "running" else []
        rows.append(WorkloadRow(session=member, workload=workload, state=status.state, baseline_step_s=status.baseline_step_s,
                                stack=status.stack, gain=status.gain, spent_device_s=status.spent_device_s, stop_reason=status.stop_reason))
    running = RUNS.running(name) or any(r.state == "running" for r in rows)
    state = "running" if running else "closed" if all(r.state == "closed" for r in rows) else "stopped"
    done = sum(r.state == "closed" for r in rows)
    summary = f"pass {name}: {state}; {done} of {len(rows)} workloads closed, {tried} candidate(s) tried; " + "; ".join(
        f"{r.session} {' + '.join(r.stack) or 'nothing kept'}{f' {r.gain:.3g}x' if r.gain else ''}" for r in rows)
    return OptimizeStatus(session=name, workload=f"a pass over {len(stored['workloads'])} workloads",
                          folder=workspace.relative(folder_of(name, workspace)), state=state,
                          phase="closed" if state == "closed" else phases[0] if phases else "baseline",
                          summary=summary, candidates=tried, pending_proposals=0, stack=[], gain=None, baseline_step_s=None,
                          budget_device_s=budget, spent_device_s=spent, stop_reason=None, error=_error(name), workloads=rows)
