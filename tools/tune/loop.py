"""The tune loop: ours, not the proposer's. Baseline first (other devices run candidates beside it; their
speedups are filled in when it lands); then propose → novelty check → compile →
run on a free device → record → tell, until a stop rule fires; then re-validate the winner and close.

The loop is a pipeline: while every device runs a candidate, up to `compile_ahead` more are proposed,
compiled and disasm-checked on the CPU cores, and each device takes the next compiled one (in the
order they were proposed) the moment it is free. With compile_ahead 0 a candidate is only proposed
when a device is free for it: the loop as it first was (docs/decisions.md: Tune compiles ahead).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from typing import Any

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.judging import Judging
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.roof import Roof
from hyperloom.tools.runtime.pool import RunnerPool
from hyperloom.tools.tune.seeds import prepare_session
from hyperloom.tools.tune.devices import slot_label, worker_slots
from hyperloom.tools.tune.budget import MIN_LAUNCH_S, Budget
from hyperloom.tools.tune.evaluate import Built, Outcome, compile_candidate, run_compiled
from hyperloom.tools.tune.models import TrialRecord, TuneReport, TuneRequest
from hyperloom.tools.tune.proposers import make_proposer
from hyperloom.tools.tune.report import close_session, figures
from hyperloom.tools.tune.revalidate import revalidate
from hyperloom.tools.tune.session import WARM_START, Session, candidate_digest, open_session, queue_candidate
from hyperloom.tools.tune.space import Params, Space, check_params
from hyperloom.tools.tune.storage import storage_url

POLL_S = 0.2
SWITCH_INTERVAL_S = 0.0005
"""How long a thread may hold the GIL while another waits (Python's default is 5 ms). A device's thread wakes when
its worker answers and needs the GIL for a moment to hand the next launch over; with compiles running ahead in
other threads, the default makes it wait up to 5 ms per launch while the GPU idles."""
MAX_AUTO_AHEAD = 8
COMPILER = "compiler"  # the device of a candidate rejected before any device ran it


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
    with ExitStack() as workers:
        pools: list[RunnerPool] = []

        def start_workers(launchable: Launchable) -> None:  # they start while the session stages inputs and freezes references
            slots = worker_slots(launchable.backend, request.workers, request.devices)
            pools.append(workers.enter_context(RunnerPool(request.worker_mode, launchable.backend, slots, request.recycle_after)))

        session, _ = open_session(request, workspace, prepared=start_workers)
        pool, ledger = pools[0], session.ledger
        with session:
            roof = Roof(request.roof_gbps, request.roof_tflops,
                        "the roof tune was given") if request.roof_gbps or request.roof_tflops else None
            judging = workers.enter_context(closing(Judging.open(session.launchable, session.staged_sets(workspace), workspace, roof=roof,
                                                                 timeout_s=request.timeout_s)))
            # connects the proposer (and its storage) before "running" is answered
            loop = Loop(session, request, workspace, progress, control, [runner.device for runner in pool.runners], judging)
            control.session_id = session.id
            control.opened.set()
            ledger.release_proposals()
            # refuses a backend that times no kernels; queues the kernel's own autotuner choice first
            prepare_session(session, request, workspace)
            for params in request.warm_start:  # after the baseline, before the proposer's own (the loop takes proposals first)
                queue_candidate(session.manifest, ledger, params, WARM_START)
            ledger.clear_stop_request()
            ledger.set_state("running")
            ledger.set_request(request)
            reason = loop.run(pool)
            ledger.set_stop_reason(reason)
            revalidate(session, request, workspace, pool)
            loop.record_run(pool)
            pool.close()
            shutil.rmtree(session.folder / "scratch", ignore_errors=True)
            return close_session(session.folder, session.manifest, ledger, workspace)


class Loop:
    def __init__(self, session: Session, request: TuneRequest, workspace: Workspace, progress: ProgressFn | None, control: Control,
                 slots: list[int | None], judging: Judging | None = None) -> None:
        self.session, self.request, self.workspace, self.progress, self.control = session, request, workspace, progress, control
        self.judging = judging
        self.ledger = session.ledger
        spec = session.launchable.loaded.spec
        self.space = Space(spec.tuning_of(session.launchable.variant),
                           {name: spec.tuning_of(o.variant) for name, o in session.others.items()}, variant=session.launchable.variant_name)
        # A machine sharing the study owns a candidate for as long as one candidate can take: every
        # input set and the timing, each capped at timeout_s, plus room for the compile.
        lease_s = request.timeout_s * (len(session.launchable.input_sets) + 1) + LEASE_COMPILE_S
        self.proposer = make_proposer(request.strategy, self.space, request.seed, storage_url(request.storage, workspace),
                                      request.study or session.id, lease_s)
        self.budget = Budget(request.budget_device_s, self.ledger.spent_s())
        self.timing = request.timing()
        self.trials = self.ledger.trials()
        self.recorded = {t.hash for t in self.trials}
        self.in_flight: dict[str, Params] = {}
        self.started = time.monotonic()
        self.slots = slots  # one per worker: its GPU, or None for a CPU worker
        cores = os.cpu_count() or 2
        self.ahead = request.compile_ahead if request.compile_ahead is not None else max(1, min(MAX_AUTO_AHEAD, cores - len(self.slots)))
        self.runs: list[dict[str, Any]] = self.ledger.runs()
        self.run_entry: dict[str, Any] = {"worker_mode": request.worker_mode, "compile_ahead": self.ahead,
                                          "slots": [slot_label(s) for s in self.slots],
                                          "started_at": dt.datetime.now(dt.timezone.utc).isoformat(), "loop_wall_s": 0.0, "candidates": 0,
                                          "workers": {}}
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
        if self.control.stop.is_set() or self.ledger.stop_requested():
            return "stopped on request (tune stop)"
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
        if not self.seen({}):
            return {}, "baseline"  # first; the others run beside it, their speedups filled in when it lands
        while (proposal := self.ledger.take_proposal()) is not None:
            params, note = check_params(proposal[0]), proposal[1]
            if not self.seen(params):
                return params, WARM_START if note == WARM_START else "external"
        params = self.proposer.ask(self.seen)
        return (params, self.proposer.name) if params is not None else None

    def run(self, pool: RunnerPool) -> str:
        """Propose, compile ahead and run on every free device until a stop rule fires; the reason."""
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        started = time.perf_counter()
        flow = _Flow(free=deque(range(len(self.slots))))
        with ThreadPoolExecutor(max_workers=max(self.ahead, len(self.slots)), thread_name_prefix="tune-compile") as compiler, \
                ThreadPoolExecutor(max_workers=len(self.slots), thread_name_prefix="tune-device") as devices:
            try:
                while True:
                    flow.reason = flow.reason or self.stop_reason()
                    self.propose(flow, compiler)
                    self.take_compiled(flow)
                    if flow.reason is not None and not flow.reason.startswith("reached max_candidates"):
                        self.drop_unstarted(flow)
                    self.dispatch(flow, devices, pool)
                    if not flow.running and not flow.queue:
                        if flow.reason is not None:
                            return flow.reason
                        if (self.request.strategy != "external" and self.ledger.pending_proposals() == 0
                                and self.digest({}) in self.recorded):
                            return "the proposer has nothing more to propose (space exhausted)"
                        time.sleep(POLL_S)  # waiting for tune_propose, tune_stop or the deadline
                        continue
                    self.record_ended(flow, devices, pool)
            finally:
                self.run_entry["loop_wall_s"] = time.perf_counter() - started
                self.record_run(pool)

    def propose(self, flow: _Flow, compiler: ThreadPoolExecutor) -> None:
        """Propose (each new to the session) and start compiling, until every free device and `ahead` more have one."""
        while flow.reason is None and len(flow.queue) < len(flow.free) + self.ahead and (candidate := self.next_candidate()) is not None:
            flow.queue.append(self.compile(compiler, *candidate))
            flow.reason = self.stop_reason()

    def take_compiled(self, flow: _Flow) -> None:
        """Compiles that ended: rejected ones recorded (no device ran them), built ones ready for a device."""
        for waiting in [c for c in flow.queue if c.compiling is not None and c.compiling.done()]:
            result, waiting.compiling = waiting.compiling.result(), None  # type: ignore[union-attr]
            if isinstance(result, Outcome):
                flow.queue.remove(waiting)
                self.finish(waiting.params, waiting.proposer, -1, None, result)
            else:
                waiting.compiled = result

    def drop_unstarted(self, flow: _Flow) -> None:
        """After a stop rule: compiled candidates no device started are no trials."""
        for dropped in [c for c in flow.queue if c.compiled is not None]:
            flow.queue.remove(dropped)
            del self.in_flight[dropped.digest]

    def dispatch(self, flow: _Flow, devices: ThreadPoolExecutor, pool: RunnerPool) -> None:
        """Each free device takes the next compiled candidate, in the order proposed."""
        while flow.free and flow.queue and flow.queue[0].compiled is not None:
            head, worker = flow.queue.popleft(), flow.free.popleft()
            future = devices.submit(run_compiled, self.session, head.compiled, self.workspace, self.budget, runner=pool.runners[worker],
                                    timing=self.timing, timeout_s=self.request.timeout_s, digest=head.digest, judging=self.judging)
            flow.running[future] = (head, worker)

    def record_ended(self, flow: _Flow, devices: ThreadPoolExecutor, pool: RunnerPool) -> None:
        """Wait for a run or a compile to end; a freed device takes the next candidate before the ended ones are recorded."""
        pending = [*flow.running, *(c.compiling for c in flow.queue if c.compiling is not None)]
        done, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
        ended = [(*flow.running.pop(future), future.result()) for future in done if future in flow.running]
        flow.free.extend(worker for _, worker, _ in ended)
        if flow.reason is None and not self.control.stop.is_set():
            self.dispatch(flow, devices, pool)
        for finished, worker, outcome in ended:
            self.finish(finished.params, finished.proposer, worker, self.slots[worker], outcome)

    def compile(self, compiler: ThreadPoolExecutor, params: Params, proposer: str) -> _Candidate:
        digest = self.digest(params)
        self.in_flight[digest] = params
        future = compiler.submit(compile_candidate, self.session, params, self.workspace, expect=self.request.expect,
                                 forbid=self.request.forbid)
        return _Candidate(params, proposer, digest, future)

    def record_run(self, pool: RunnerPool) -> None:
        """This run's entry in the ledger's `runs` (breakdown.json's run figures): wall time, candidates, worker processes."""
        self.run_entry["workers"] = pool.stats()
        self.ledger.set_runs([*self.runs, self.run_entry])

    def finish(self, params: Params, proposer: str, worker: int, device: int | None, outcome: Outcome) -> None:
        """Record a finished candidate (worker -1: rejected at compile, no device ran it) and tell the proposer."""
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
            speedup=(1.0 if median else None) if proposer == "baseline"
                    else (baseline.median_s / median if baseline and baseline.median_s and median else None),
            device=COMPILER if worker < 0 else outcome.device_name or slot_label(device), device_index=device, worker=worker,
            device_s=outcome.device_s, compile_s=outcome.compile_s, finished_at=dt.datetime.now(dt.timezone.utc).isoformat(),
            phases_s=outcome.phases_s, build_sha256=outcome.build_sha256,
        ))
        self.trials.append(record)
        self.recorded.add(digest)
        if proposer == "baseline" and median:
            self.trials = [self._against(trial, median) for trial in self.trials]
        self.run_entry["candidates"] += 1
        self.proposer.tell(params, median)
        if self.progress is not None:
            self.progress(len(self.recorded), self.request.max_candidates)

    def _against(self, trial: TrialRecord, baseline_s: float) -> TrialRecord:
        """`trial` with its speedup over the baseline, stored, when it finished before the baseline did."""
        if trial.speedup is not None or not trial.median_s or trial.proposer == "baseline":
            return trial
        return self.ledger.replace(trial.model_copy(update={"speedup": baseline_s / trial.median_s}))


@dataclass
class _Candidate:
    """A proposed candidate on its way to a device: compiling, then compiled (or recorded as rejected)."""

    params: Params
    proposer: str
    digest: str
    compiling: Future[Built | Outcome] | None
    compiled: Built | None = None


@dataclass
class _Flow:
    """The loop's candidates in motion: free devices, proposed candidates in order, those on a device, and the stop reason."""

    free: deque[int]
    queue: deque[_Candidate] = field(default_factory=deque)
    running: dict[Future[Outcome], tuple[_Candidate, int]] = field(default_factory=dict)
    reason: str | None = None
