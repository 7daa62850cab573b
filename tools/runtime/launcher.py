"""Run a trial in a worker process pinned to one device, with a wall-clock timeout.

A hang is killed (the whole process group) and reported as TIMEOUT; a crash as CRASH with its
signal and stderr. The caller's loop survives both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hyperloom.tools.runtime.models import TrialRequest, TrialResult

VISIBLE_DEVICES = {"cuda": "CUDA_VISIBLE_DEVICES", "hip": "HIP_VISIBLE_DEVICES"}


def run_trial(request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
    """Run `request` in a fresh worker; `device` pins it (the worker then sees that one GPU as 0)."""
    env = dict(os.environ)
    if device is not None and request.backend in VISIBLE_DEVICES:
        env[VISIBLE_DEVICES[request.backend]] = str(device)  # never ROCR_VISIBLE_DEVICES: it can force a CPU fallback
        request = request.model_copy(update={"device_index": 0})
    with tempfile.TemporaryDirectory(prefix="hyperloom-trial-") as tmp:
        request_path, result_path = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request_path.write_text(request.model_dump_json())
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hyperloom.tools.runtime.worker", str(request_path), str(result_path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=env, start_new_session=True,
        )
        try:
            _, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate()
            return TrialResult(
                status="TIMEOUT", message=f"the trial did not finish within {timeout_s:g} s and was killed",
                stderr=stderr[-4000:], elapsed_s=time.perf_counter() - started,
            )
        if proc.returncode != 0 or not result_path.is_file():
            how = _how_it_ended(proc.returncode)
            return TrialResult(
                status="CRASH", message=f"the worker died with {how}", stderr=stderr[-4000:], elapsed_s=time.perf_counter() - started
            )
        result = TrialResult.model_validate_json(result_path.read_text())
        result.stderr = (result.stderr + stderr)[-4000:]
        return result


def _how_it_ended(returncode: int) -> str:
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:
        return f"signal {-returncode}"
