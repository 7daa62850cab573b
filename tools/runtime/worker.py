"""The trial a worker process runs (through hyperloom.core.worker): one launch or timing loop, its
result as JSON. Failures inside the trial (a device fault, a missing symbol) become its status;
a crash or a hang of the process is reported by the launcher as CRASH or TIMEOUT."""

from __future__ import annotations

import time
import traceback
from typing import Any

from hyperloom.tools.runtime.models import TrialRequest, TrialResult


def run_payload(payload: dict[str, Any], reuse: Any = None) -> dict[str, Any]:
    """`reuse`: what a warm worker keeps between GPU trials (tools/runtime/warm_trial.py); None in a fresh process."""
    request = TrialRequest.model_validate(payload)
    started = time.perf_counter()
    try:
        if request.backend == "c":
            from hyperloom.tools.runtime.host import run_host

            started = time.perf_counter()  # the trial's own time: the imports above belong to the process's start
            result = run_host(request)
        elif request.backend == "triton_interpreter":
            from hyperloom.tools.triton.interpret import run_interpreted

            started = time.perf_counter()
            result = run_interpreted(request)
        else:
            from hyperloom.tools.runtime.gpu import run_gpu

            started = time.perf_counter()
            result = run_gpu(request, reuse)
    except Exception as exc:  # every failure becomes a result the caller reads, with its traceback
        status = "CRASH" if type(exc).__name__ == "DeviceFault" else "ERROR"
        result = TrialResult(status=status, message=f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:])
    result.elapsed_s = time.perf_counter() - started
    return result.model_dump(mode="json")
