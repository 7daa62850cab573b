"""Run a trial in a worker process pinned to one device, with a wall-clock timeout.

A hang is killed (the whole process group) and reported as TIMEOUT; a crash, an exit or an
escaped exception as CRASH with its reason and stderr. The caller's loop survives all of them.
"""

from __future__ import annotations

import os

from hyperloom.core.worker import run_worker
from hyperloom.tools.runtime.models import TrialRequest, TrialResult

VISIBLE_DEVICES = {"cuda": "CUDA_VISIBLE_DEVICES", "hip": "HIP_VISIBLE_DEVICES"}


def run_trial(request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
    """Run `request` in a fresh worker; `device` pins it (the worker then sees that one GPU as 0)."""
    env = dict(os.environ)
    if device is not None and request.backend in VISIBLE_DEVICES:
        env[VISIBLE_DEVICES[request.backend]] = str(device)  # never ROCR_VISIBLE_DEVICES: it can force a CPU fallback
        request = request.model_copy(update={"device_index": 0})
    outcome = run_worker("hyperloom.tools.runtime.worker:run_payload", request.model_dump(mode="json"), timeout_s=timeout_s, env=env)
    if outcome.status == "TIMEOUT":
        return TrialResult(status="TIMEOUT", message=f"the trial {outcome.message}", stderr=outcome.stderr, elapsed_s=outcome.elapsed_s)
    if not outcome.ok:
        return TrialResult(status="CRASH", message=outcome.describe(), stderr=outcome.stderr, elapsed_s=outcome.elapsed_s)
    result = TrialResult.model_validate(outcome.result)
    result.stderr = (result.stderr + outcome.stderr)[-4000:]
    return result
