"""The trial a worker process runs (through hyperloom.core.worker): one launch or timing loop, its
result as JSON. Failures inside the trial (a device fault, a missing symbol) become its status;
a crash or a hang of the process is reported by the launcher as CRASH or TIMEOUT."""

from __future__ import annotations

import importlib
import time
import traceback
from typing import Any

from hyperloom.tools.runtime.models import TrialRequest, TrialResult


BACKENDS = {
    "c": "hyperloom.tools.runtime.host:run_host",
    "triton_interpreter": "hyperloom.tools.triton.interpret:run_interpreted",
    "cuda": "hyperloom.tools.runtime.gpu:run_gpu",
    "hip": "hyperloom.tools.runtime.gpu:run_gpu",
}
"""Each backend's trial function, by 'module:function', imported in the worker when its first trial comes (a backend
above the runtime, Triton's interpreter, plugs in by name). The GPU backends also take what a warm worker keeps."""
KEEPS_STATE = ("cuda", "hip")


def run_payload(payload: dict[str, Any], reuse: Any = None) -> dict[str, Any]:
    """`reuse`: what a warm worker keeps between GPU trials (tools/runtime/warm_trial.py); None in a fresh process."""
    request = TrialRequest.model_validate(payload)
    started = time.perf_counter()
    try:
        module, _, name = BACKENDS[request.backend].partition(":")
        function = getattr(importlib.import_module(module), name)
        started = time.perf_counter()  # the trial's own time: the imports above belong to the process's start
        result = function(request, reuse) if request.backend in KEEPS_STATE else function(request)
    except Exception as exc:  # every failure becomes a result the caller reads, with its traceback
        status = "CRASH" if type(exc).__name__ == "DeviceFault" else "ERROR"
        result = TrialResult(status=status, message=f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:])
    result.elapsed_s = time.perf_counter() - started
    return result.model_dump(mode="json")
