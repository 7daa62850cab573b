"""The tune tools as plain functions: tune_start runs the loop (in a background thread of this
process, so it outlives the MCP call that started it), the others read and steer a session through
its ledger, so they work on sessions started by another process too."""

from __future__ import annotations

from hyperloom.core.background import Runs
from hyperloom.core.errors import HyperloomError
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.tune.loop import Control, run_tune
from hyperloom.tools.tune.models import ProposeRequest, ProposeResult, SessionRef, TuneReport, TuneRequest, TuneStatus
from hyperloom.tools.tune.report import build_report, close_session, status_of
from hyperloom.tools.tune.session import open_existing, queue_candidate
from hyperloom.tools.tune.sources import propose_source
from hyperloom.tools.tune.space import check_params

OPEN_TIMEOUT_S = 600.0


def _start(request: TuneRequest, workspace: Workspace) -> str:
    """Run the session in the background; return its id once it opened, raising what it raised before that."""
    RUNS.refuse_if_running(request.session, "tune")
    control = Control()
    run = RUNS.launch(control, lambda: run_tune(request, workspace, None, control), "tune-session")
    control.opened.wait(OPEN_TIMEOUT_S)
    if control.session_id is None:
        if isinstance(run.failure, HyperloomError):
            raise run.failure
        raise HyperloomError(f"the session did not open: {run.error or 'timed out'}", "check the spec with bench first")
    RUNS.register(control.session_id, run)
    return control.session_id


RUNS = Runs("session")  # by session id: known once the session opened


def tune_start(request: TuneRequest, workspace: Workspace, progress: ProgressFn | None = None) -> TuneStatus:
    """Start or resume a session: in the background (returns at once), or to its end."""
    if not request.background:
        report = run_tune(request, workspace, progress)
        return report.status
    session_id = _start(request, workspace)
    return tune_status(SessionRef(session=session_id), workspace)


def tune_status(request: SessionRef, workspace: Workspace, progress: ProgressFn | None = None) -> TuneStatus:
    del progress
    with open_existing(request.session, workspace) as stored:
        run = RUNS.get(stored.id)
        state = "running" if RUNS.running(stored.id) else None
        return status_of(stored.manifest, stored.ledger, stored.folder, workspace, state, run.error if run else None)


def tune_propose(request: ProposeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> ProposeResult:
    """Queue a candidate for the session; the loop runs queued candidates before its own proposer's."""
    del progress
    params = check_params(request.params)
    with open_existing(request.session, workspace) as stored:
        if request.source is not None or request.diff is not None:
            result = propose_source(stored, request, params, workspace)
        else:
            result = queue_candidate(stored.manifest, stored.ledger, params, request.note)
        if not result.accepted:
            return result
        running = RUNS.running(stored.id)
        return result.model_copy(update={"summary": "queued; " + ("the running loop takes it next" if running
                                                                  else "it runs when the session is started or resumed with tune start")})


def tune_stop(request: SessionRef, workspace: Workspace, progress: ProgressFn | None = None) -> TuneStatus:
    """Ask the loop to stop: no new candidate starts, the ones in flight finish and are recorded, the report is written."""
    del progress
    with open_existing(request.session, workspace) as stored:
        stored.ledger.request_stop()
        run = RUNS.get(stored.id)
        if run is not None:
            run.control.stop.set()
            run.thread.join(timeout=5.0)
        if not RUNS.running(stored.id):
            if not stored.ledger.stop_reason():
                stored.ledger.set_stop_reason("stopped on request (tune stop)")
            close_session(stored.folder, stored.manifest, stored.ledger, workspace)
            return status_of(stored.manifest, stored.ledger, stored.folder, workspace, "closed", run.error if run else None)
        return status_of(stored.manifest, stored.ledger, stored.folder, workspace, "stopped")


def tune_report(request: SessionRef, workspace: Workspace, progress: ProgressFn | None = None) -> TuneReport:
    """The leaderboard, rejections with reasons, re-validation and budget; writes report.md once the session is not running."""
    del progress
    with open_existing(request.session, workspace) as stored:
        if RUNS.running(stored.id):
            return build_report(stored.manifest, stored.ledger, stored.folder, workspace, "running")
        return close_session(stored.folder, stored.manifest, stored.ledger, workspace)
