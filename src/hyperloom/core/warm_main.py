"""Warm worker entry: `python -m hyperloom.core.warm_main REQUESTS_FD RESPONSES_FD PARENT_PID`.

Reads one JSON request a line ({"entry": "module:function", "payload": {...}}), answers each with
worker_main's report on one line, until its requests pipe closes; then it leaves at once (worker_main.leave). A
watchdog thread kills the process group when the parent is gone, even while a call is stuck in native code (a hung
kernel).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from hyperloom.core.worker_main import call_entry, leave

WATCH_S = 0.25


def ready(payload: dict[str, Any]) -> dict[str, Any]:
    """The default first call: answers that the process is up."""
    return {"pid": os.getpid()}


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    os.killpg(os.getpgid(0), signal.SIGKILL)  # the parent died: nobody will read our answers


def main(argv: list[str]) -> int:
    requests, responses, parent = int(argv[0]), int(argv[1]), int(argv[2])
    threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
    with os.fdopen(requests, "rb") as reader, os.fdopen(responses, "wb") as writer:
        for line in reader:
            request = json.loads(line)
            report = call_entry(request["entry"], request["payload"])
            writer.write(json.dumps(report, default=str).encode() + b"\n")
            writer.flush()
    return 0


if __name__ == "__main__":
    leave(main(sys.argv[1:]))
