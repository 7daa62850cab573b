"""Trial runners: how a trial reaches a worker process, one runner per device (or CPU worker).

fresh: a new process for every launch (launcher.run_trial): nothing a trial does can reach the next.
warm: one long-lived process per device that runs launch after launch (tools/runtime/warm_trial.py),
replaced after any launch that did not end OK (CRASH, TIMEOUT, ERROR), when the caller discards it
(a candidate whose outputs were wrong: its code misbehaved, so its process is not trusted), and every
`recycle_after` launches (a schedule that bounds anything a trial leaves behind, such as a host
kernel's shared library still mapped). For a GPU the successor starts (a spare) as soon as a process
enters service, so a replacement rarely waits; when it does, the wait is inside that launch's time and
timeout. A host kernel's worker has no spare: the spare's start (Python, numpy) would share the CPU
with the host kernel being timed (measured on 2 cores: the candidate timed after a replacement ran up
to 2.3x slower than in a clean session), so its replacement starts when it is needed, before the
launch's timed runs.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import Future
from concurrent.futures import TimeoutError as StillStarting
from dataclasses import dataclass, field
from typing import Literal, Protocol

from hyperloom.core.errors import HyperloomError
from hyperloom.core.warm import WarmWorker
from hyperloom.tools.runtime.launcher import pinned, pinned_env, run_trial, trial_result
from hyperloom.tools.runtime.models import HOST_BACKENDS, TrialRequest, TrialResult

WorkerMode = Literal["fresh", "warm"]
TRIAL_ENTRY = "hyperloom.tools.runtime.warm_trial:run_payload"
PRELOAD_ENTRY = "hyperloom.tools.runtime.warm_trial:preload"
START_TIMEOUT_S = 120.0


@dataclass
class RunnerStats:
    """What a runner's processes cost and why they were replaced."""

    launches: int = 0
    started: int = 0  # processes that entered service (a spare never used is not counted)
    start_s: float = 0.0  # seconds spent starting warm processes (in the background or inside a launch)
    replaced: Counter[str] = field(default_factory=Counter)  # why: CRASH, TIMEOUT, ERROR, verdict, schedule

    def as_dict(self) -> dict[str, object]:
        return {"launches": self.launches, "processes_started": self.started, "start_s": round(self.start_s, 6),
                "replaced": dict(sorted(self.replaced.items()))}


class Runner(Protocol):
    """Runs one trial on its device: launcher.run_trial's signature (the device argument is the runner's own)."""

    device: int | None
    stats: RunnerStats

    def __call__(self, request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult: ...

    def discard(self, why: str) -> None: ...

    def close(self) -> None: ...


class FreshRunner:
    """A fresh worker process for every launch."""

    def __init__(self, device: int | None) -> None:
        self.device, self.stats = device, RunnerStats()

    def __call__(self, request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
        self.stats.launches += 1
        self.stats.started += 1
        return run_trial(request, timeout_s, self.device)

    def discard(self, why: str) -> None:
        pass  # every launch has its own process already

    def close(self) -> None:
        pass


class WarmRunner:
    """One warm worker process pinned to `device`, replaced after anything that could leave it tainted.

    With `spare`, the next process starts as soon as one enters service, so a replacement (a fault, a
    wrong verdict, the schedule) usually finds its successor up instead of waiting a process start."""

    def __init__(self, backend: str, device: int | None, recycle_after: int = 256, *, spare: bool = True) -> None:
        self.backend, self.device, self.recycle_after, self.spare = backend, device, recycle_after, spare
        self.stats = RunnerStats()
        self._env = pinned_env(backend, device)
        self._lock = threading.Lock()
        self._worker: WarmWorker | None = None
        self._next: Future[WarmWorker] | None = None  # the next process: starting, or up and waiting to serve
        self._closed = False
        self._since_start = 0

    def prestart(self) -> None:
        """Start the next process in the background (unless one is starting or waiting already)."""
        if self._next is not None or self._closed:
            return
        future: Future[WarmWorker] = Future()
        self._next = future

        def body() -> None:
            worker = WarmWorker(self._env)
            try:
                self.stats.start_s += worker.start(PRELOAD_ENTRY, {"backend": self.backend}, timeout_s=START_TIMEOUT_S)
            except BaseException as exc:  # noqa: BLE001 - handed to the launch that waits for it
                future.set_exception(exc)
                return
            future.set_result(worker)

        threading.Thread(target=body, name=f"warm-start-{self.device}", daemon=True).start()

    def __call__(self, request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
        with self._lock:
            started = time.perf_counter()
            self.stats.launches += 1
            try:
                worker = self._ready(timeout_s)
            except HyperloomError as exc:
                return TrialResult(status="ERROR", message=str(exc), elapsed_s=time.perf_counter() - started)
            if worker is None:
                return TrialResult(status="TIMEOUT", message=f"the trial did not finish within {timeout_s:g} s and was killed (its worker "
                                                             "was still starting)",
                                   elapsed_s=time.perf_counter() - started)
            left = timeout_s - (time.perf_counter() - started)
            outcome = worker.call(TRIAL_ENTRY, pinned(request, self.device).model_dump(mode="json"), timeout_s=max(left, 1e-3))
            if outcome.status == "TIMEOUT":  # named by the launch's own cap, as a fresh worker's is
                outcome = type(outcome)("TIMEOUT", message=f"did not finish within {timeout_s:g} s and was killed", stderr=outcome.stderr,
                                        elapsed_s=outcome.elapsed_s)
            result = trial_result(outcome)
            self._since_start += 1
            if not outcome.ok or result.status != "OK":
                self._replace(result.status)
            elif self._since_start >= self.recycle_after:
                self._replace("schedule")
            return result

    def discard(self, why: str) -> None:
        """Replace the process (a candidate run in it misbehaved)."""
        with self._lock:
            if self._worker is not None:
                self._replace(why)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._next is not None:  # a process still starting is closed the moment it is up; none is waited for
                self._next.add_done_callback(_close_started)
                self._next = None
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def _ready(self, timeout_s: float) -> WarmWorker | None:
        """The process in service, or the next one (waited for, up to the launch's timeout)."""
        if self._worker is not None and self._worker.alive:
            return self._worker
        if self._worker is not None:  # died between launches
            self._replace("CRASH")
        self.prestart()
        assert self._next is not None
        try:
            worker = self._next.result(timeout=timeout_s)
        except StillStarting:
            return None  # still starting: it stays next, for the next launch
        except HyperloomError:
            self._next = None
            raise
        self._worker, self._next, self._since_start = worker, None, 0
        self.stats.started += 1
        if self.spare:
            self.prestart()  # its successor starts while it serves
        return worker

    def _replace(self, why: str) -> None:
        self.stats.replaced[why] += 1
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self.prestart()


def _close_started(started: Future[WarmWorker]) -> None:
    """Close a worker whose start finished after its runner closed (a start that failed left nothing)."""
    if started.exception() is None:
        started.result().close()


class RunnerPool:
    """The runners of one session, one per worker slot, created as worker_mode says; more for devices asked for later."""

    def __init__(self, mode: WorkerMode, backend: str, slots: list[int | None], recycle_after: int = 256) -> None:
        self.mode, self.backend, self.recycle_after = mode, backend, recycle_after
        self.runners: list[Runner] = [self._make(slot) for slot in slots]

    def _make(self, device: int | None) -> Runner:
        if self.mode == "fresh":
            return FreshRunner(device)
        runner = WarmRunner(self.backend, device, self.recycle_after, spare=self.backend not in HOST_BACKENDS)
        runner.prestart()
        return runner

    def for_device(self, device: int | None) -> Runner:
        """The first runner on `device`, or a new one."""
        for runner in self.runners:
            if runner.device == device:
                return runner
        runner = self._make(device)
        self.runners.append(runner)
        return runner

    def stats(self) -> dict[str, object]:
        total = RunnerStats()
        for runner in self.runners:
            total.launches += runner.stats.launches
            total.started += runner.stats.started
            total.start_s += runner.stats.start_s
            total.replaced.update(runner.stats.replaced)
        return {"worker_mode": self.mode, **total.as_dict()}

    def close(self) -> None:
        for runner in self.runners:
            runner.close()

    def __enter__(self) -> RunnerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
