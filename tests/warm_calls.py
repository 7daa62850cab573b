"""Calls a warm worker test runs in the worker process (tests/test_warm_worker.py): each ends a different way."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Any


def echo(payload: dict[str, Any]) -> dict[str, Any]:
    return {"pid": os.getpid(), "value": payload.get("value")}


def hang(payload: dict[str, Any]) -> None:
    while True:
        time.sleep(0.05)


def segfault(payload: dict[str, Any]) -> None:
    ctypes.string_at(0)


def raises(payload: dict[str, Any]) -> None:
    raise ValueError("refused on purpose")


def exits(payload: dict[str, Any]) -> None:
    sys.exit(3)


def dies(payload: dict[str, Any]) -> None:
    print("going away", flush=True)
    os._exit(4)


def detaches(payload: dict[str, Any]) -> dict[str, Any]:
    """Start a child in a session of its own (out of the worker's process group) that would run for minutes."""
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    return {"child": child.pid}
