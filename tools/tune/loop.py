"""The tune loop: ours, not the proposer's. Baseline first; then propose → novelty check → evaluate
on a free worker → record → tell, until a stop rule fires; then re-validate the winner and close."""

from __future__ import annotations

import datetime as dt
import shutil
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.tune.devices import worker_slots
from hyperloom.tools.tune.evaluate import MIN_LAUNCH_S, Budget, Outcome, evaluate
from hyperloom.tools.tune.models import TrialRecord, TuneReport, TuneRequest
from hyperloom.tools.tune.proposers import make_proposer
from hyperloom.tools.tune.report import close_session, figures
from hyperloom.tools.tune.revalidate import revalidate
from hyperloom.tools.tune.session import WARM_START, Session, candidate_digest, open_session, queue_candidate
from hyperloom.tools.tune.space import Params, Space, check_params
from hyperloom.tools.tune.storage import storage_url

POLL_S = 0.2


@dataclass
class Control:
    """How a front end steers a running loop: a stop flag, and the session id once it is known."""

    stop: threading.Event = field(default_factory=threading.Event)
    session_id: str | None = None
    opened: threading.Event = field(default_factory=threading.Event)


LEASE_COMPILE_S = 600.0


def run_tune(request: TuneRequest, workspace: Workspace, progress: ProgressFn | None = None, control: Control | None = None) -> TuneReport:
    """Run (or resume) a session to a stop rule, re-validate the winner, write the report."""
    control = control or Control()
    session, _ = open_session(request, workspace)
    ledger = session.ledger
    try:
        loop = Loop(session, request, workspace, progress, control)  # connects the proposer (and its storage) before "running" is answered
        control.session_id = session.id
        control.opened.set()
        ledger.release_proposals()
        for params in request.warm_start:  # after the baseline, before the proposer's own (the loop takes proposals first)
            queue_candidate(session.manifest, ledger, params, WARM_START)
        ledger.clear("stop_requested")
        ledger.set("state", "running")
        ledger.set("request", request.model_dump_json())
        reason = loop.run()
        ledger.set("stop_reason", reason)
        revalidate(session, request, workspace)
        shutil.rmtree(session.folder / "scratch", ignore_errors=True)
        return close_session(session.folder, session.manifest, ledger, workspace)
    finally:
        ledger.close()


class Loop:
    def __init__(self, session: Session, request: TuneRequest, workspace: Workspace, progress: ProgressFn | None, control: Control) -> None:
        self.session, self.request, self.workspace, self.progress, self.control = session, request, workspace, progress, control
        self.ledger = session.ledger
        spec = session.launchable.loaded.spec
        self.space = Space(spec.tuning_of(session.launchable.variant), {name: spec.tuning_of(o.variant) for name, o in session.others.items()},
                           variant=session.launchable.variant_name)
        # A machine sharing the study owns a candidate for as long as one candidate can take: every
        # input set and the timing, each capped at timeout_s, plus room for the compile.
        lease_s = request.timeout_s * (len(session.launchable.input_sets) + 1) + LEASE_COMPILE_S
        self.proposer = make_proposer(request.strategy, self.space, request.seed, storage_url(request.storage, workspace), request.study or session.id, lease_s)
        self.budget = Budget(request.budget_device_s, self.ledger.spent_s())
        self.timing = request.timing()
        self.trials = self.ledger.trials()
        self.recorded = {t.hash for t in self.trials}
        self.in_flight: dict[str, Params] = {}
        self.started = time.monotonic()
        for trial in self.trials:  # a resumed proposer learns everything the ledger knows
            self.proposer.tell(trial.params, trial.median_s if trial.status == "PASSED" else None)

    def digest(self, params: Params) -> str:
        return candidate_digest(self.session.manifest, params)

    def seen(self, params: Params) -> bool:
        digest = self.digest(params)
        return digest in self.recorded or digest in self.in_flight

    # stop rules ---------------------------------------------------------------------------------
    def stop_reason(self) -> str | None:
        request = self.request
        if self.control.stop.is_set() or self.ledger.get("stop_requested"):
            return "stopped on request (tune_stop)"
        if len(self.recorded) + len(self.in_flight) >= request.max_candidates:
            return f"reached max_candidates ({request.max_candidates})"
        if self.budget.unspent_s() < MIN_LAUNCH_S:
            return f"device-second budget spent ({self.budget.spent_s:.1f} of {request.budget_device_s:g} s)"
        if request.deadline_s is not None and time.monotonic() - self.started >= request.deadline_s:
            return f"wall-clock deadline of {request.deadline_s:g} s reached"
        passed = [t for t in self.trials if t.status == "PASSED" and t.median_s]
        if request.target_roof_pct is not None and any((t.roof_pct or 0) >= request.target_roof_pct for t in passed):
            return f"reached the target of {request.target_roof_pct:g} % of the roof"
        if request.patience is not None and len(passed) > request.patience:
            best, since = passed[0].median_s, 0
            for trial in passed[1:]:
                if trial.median_s < best * (1 - request.epsilon):
                    best, since = trial.median_s, 0
                else:
                    since += 1
            if since >= request.patience:
                return f"patience: {since} passing candidates without a {request.epsilon:.0%} improvement"
        return None

    # proposals ----------------------------------------------------------------------------------
    def next_candidate(self) -> tuple[Params, str] | None:
        if not self.recorded and not self.in_flight:
            return {}, "baseline"
        if self.digest({}) not in self.recorded:
            return None  # the baseline runs alone and first
        while (proposal := self.ledger.take_proposal()) is not None:
            params, note = check_params(proposal[0]), proposal[1]
            if not self.seen(params):
                return params, WARM_START if note == WARM_START else "external"
        params = self.proposer.ask(self.seen)
        return (params, self.proposer.name) if params is not None else None

    def run(self) -> str:
        slots = worker_slots(self.session.launchable.backend, self.request.workers, self.request.devices)
        free = list(range(len(slots)))
        running: dict[Future[Outcome], tuple[Params, str, int, float]] = {}
        reason: str | None = None
        with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="tune-worker") as pool:
            while True:
                reason = reason or self.stop_reason()
                while reason is None and free and (candidate := self.next_candidate()) is not None:
                    params, proposer = candidate
                    digest = self.digest(params)
                    worker = free.pop(0)
                    self.in_flight[digest] = params
                    future = pool.submit(
                        evaluate, self.session, params, self.workspace, self.budget, device=slots[worker], timing=self.timing,
                        timeout_s=self.request.timeout_s, expect=self.request.expect, forbid=self.request.forbid, digest=digest,
                    )
                    running[future] = (params, proposer, worker, time.monotonic())
                    reason = self.stop_reason()
                if not running:
                    if reason is not None:
                        return reason
                    if self.request.strategy != "external" and self.ledger.pending_proposals() == 0 and self.digest({}) in self.recorded:
                        return "the proposer has nothing more to propose (space exhausted)"
                    time.sleep(POLL_S)  # waiting for tune_propose, tune_stop or the deadline
                    continue
                done, _ = wait(running, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    params, proposer, worker, _started = running.pop(future)
                    free.append(worker)
                    self.finish(params, proposer, worker, slots[worker], future.result())

    def finish(self, params: Params, proposer: str, worker: int, device: int | None, outcome: Outcome) -> None:
        digest = self.digest(params)
        del self.in_flight[digest]
        if not outcome.finished:  # cut short by the budget: its time counts, but it is no trial
            self.ledger.add_spent(f"unfinished {digest[:16]}", outcome.device_s)
            return
        baseline = next((t for t in self.trials if t.proposer == "baseline"), None)
        median = outcome.kernel.median_s if outcome.kernel else None
        bandwidth, tflops, roof = figures(self.session.launchable, median, self.request.roof_gbps, self.request.roof_tflops)
        record = self.ledger.record(TrialRecord(
            seq=0, hash=digest, params=params, proposer=proposer, status=outcome.status, reason=outcome.reason, input_set=outcome.input_set,
            median_s=median, ci_halfwidth_s=outcome.kernel.median_ci95_rel * median if outcome.kernel and median else None,
            bandwidth_gbps=bandwidth, tflops=tflops, roof_pct=roof,
            speedup=(1.0 if median else None) if proposer == "baseline" else (baseline.median_s / median if baseline and baseline.median_s and median else None),
            device=outcome.device_name or ("cpu" if device is None else f"gpu {device}"), worker=worker, device_s=outcome.device_s,
            compile_s=outcome.compile_s, finished_at=dt.datetime.now(dt.timezone.utc).isoformat(),
        ))
        self.trials.append(record)
        self.recorded.add(digest)
        self.proposer.tell(params, median)
        if self.progress is not None:
            self.progress(len(self.recorded), self.request.max_candidates)
