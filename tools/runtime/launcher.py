"""Run a trial in a worker process pinned to one device, with a wall-clock timeout.

A hang is killed (the whole process group) and reported as TIMEOUT; a crash, an exit or an
escaped exception as CRASH with its reason and stderr. The caller's loop survives all of them.
"""

from __future__ import annotations

import os

from hyperloom.core.worker import WorkerOutcome, run_worker
from hyperloom.tools.runtime.models import TrialRequest, TrialResult
from hyperloom.tools.runtime.visible import VISIBLE_DEVICES, pinned_environ


def run_trial(request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
    """Run `request` in a fresh worker; `device` pins it (the worker then sees that one GPU as 0)."""
    env = pinned_env(request.backend, device)
    outcome = run_worker("hyperloom.tools.runtime.worker:run_payload", pinned(request, device).model_dump(mode="json"), timeout_s=timeout_s,
                         env=env)
    return trial_result(outcome)


def pinned_env(backend: str, device: int | None) -> dict[str, str]:
    """The environment of a worker pinned to `device` (this process's; tools/runtime/visible.py says which GPU that is)."""
    return pinned_environ(os.environ, backend, device)


def pinned(request: TrialRequest, device: int | None) -> TrialRequest:
    """The request as a pinned worker sees it: its one GPU is device 0."""
    return request.model_copy(update={"device_index": 0}) if device is not None and request.backend in VISIBLE_DEVICES else request


def trial_result(outcome: WorkerOutcome) -> TrialResult:
    """A worker's outcome as a trial's result: TIMEOUT and CRASH from the process, else what the trial reported."""
    if outcome.status == "TIMEOUT":
        return TrialResult(status="TIMEOUT", message=f"the trial {outcome.message}", stderr=outcome.stderr, elapsed_s=outcome.elapsed_s)
    if not outcome.ok:
        return TrialResult(status="CRASH", message=outcome.describe(), stderr=outcome.stderr, elapsed_s=outcome.elapsed_s)
    result = TrialResult.model_validate(outcome.result)
    result.stderr = (result.stderr + outcome.stderr)[-4000:]
    return result
