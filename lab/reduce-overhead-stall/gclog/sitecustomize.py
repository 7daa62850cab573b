"""Diagnostic only (`scripts/device/.run5.sh` at commit 15e196b put this folder first on PYTHONPATH): every Python
process logs its garbage collections that take 0.3 ms or more to $GC_LOG_DIR/PID.log (monotonic seconds, generation,
ms, objects collected), to tell a host stall in a timed step from GPU work."""

import gc
import os
import time

_folder = os.environ.get("GC_LOG_DIR")
if _folder:
    _began = [0.0]
    _log = open(os.path.join(_folder, f"{os.getpid()}.log"), "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def _timed(phase, info):
        if phase == "start":
            _began[0] = time.perf_counter()
            return
        took_ms = (time.perf_counter() - _began[0]) * 1e3
        if took_ms >= 0.3:
            _log.write(f"{time.monotonic():.3f} gen{info['generation']} {took_ms:.2f} ms collected {info['collected']}\n")

    gc.callbacks.append(_timed)
