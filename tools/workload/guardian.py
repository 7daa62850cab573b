"""What continues a stopped worker should the controller die mid-leg: a small process, in a session of its own, told
which processes are stopped; when its pipe from the controller closes (the controller ended, however), it sends
SIGCONT to those still held. A stopped worker cannot notice by itself that its parent died (its watchdog thread is
stopped with it), so without this a killed controller would leave it stopped, holding its memory, for good; once
continued, its watchdog ends it (hyperloom.core.warm_main).
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import threading
from typing import IO

SCRIPT = """
import os, signal, sys
held = {}
for line in sys.stdin:
    verb, key, *pids = line.split()
    if verb == "stop":
        held[key] = [int(pid) for pid in pids]
    else:
        held.pop(key, None)
for pids in held.values():
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
"""


class Guardian:
    """The guardian process of this controller, started at the first hold; holds may come from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._count = 0

    def hold(self, pids: list[int]) -> str:
        """Tell the guardian `pids` are about to be stopped; returns the key release() takes."""
        with self._lock:
            self._count += 1
            key = str(self._count)
            self._send(f"stop {key} {' '.join(map(str, pids))}\n")
            return key

    def release(self, key: str) -> None:
        """Tell the guardian the processes held under `key` were continued."""
        with self._lock:
            self._send(f"cont {key}\n")

    def close(self) -> None:
        """End the guardian (nothing held: it continues nothing); at this process's exit."""
        with self._lock:
            if self._process is not None and self._process.stdin is not None:
                self._process.stdin.close()
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
            self._process = None

    def _send(self, line: str) -> None:
        for _ in range(2):  # a guardian that died is started again, once
            stdin = self._stdin()
            try:
                stdin.write(line.encode())
                stdin.flush()
                return
            except OSError:
                self._process = None

    def _stdin(self) -> IO[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen([sys.executable, "-c", SCRIPT], stdin=subprocess.PIPE, start_new_session=True)
        assert self._process.stdin is not None
        return self._process.stdin


GUARDIAN = Guardian()
atexit.register(GUARDIAN.close)
