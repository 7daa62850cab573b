"""Worker process entry point: `python -m hyperloom.tools.runtime.worker REQUEST.json RESULT.json`.

Runs one trial and writes its result. A crash or a hang ends this process, never the caller:
the launcher reports it as CRASH or TIMEOUT.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.tools.runtime.models import TrialRequest, TrialResult


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[0]), Path(argv[1])
    request = TrialRequest.model_validate_json(request_path.read_text())
    started = time.perf_counter()
    try:
        if request.backend == "c":
            from hyperloom.tools.runtime.host import run_host as run
        else:
            from hyperloom.tools.runtime.gpu import run_gpu as run
        result = run(request)
    except Exception as exc:  # every failure becomes a result the caller reads, with its traceback
        status = "CRASH" if type(exc).__name__ == "DeviceFault" else "ERROR"
        result = TrialResult(status=status, message=f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:])
    result.elapsed_s = time.perf_counter() - started
    write_bytes_atomic(result_path, result.model_dump_json().encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
