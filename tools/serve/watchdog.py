"""Run a server command in this process group and end the whole group when the tool that started it goes away.

    python watchdog.py PARENT_PID -- PROGRAM ARG...

Started by server.py in a new session (so this process leads a new process group). It runs the command in that
group and exits with its status. When it gets SIGTERM or SIGINT, or when PARENT_PID stops being its parent (the tool
was killed, even with SIGKILL), it sends SIGTERM to the group, waits a grace period, then SIGKILL: the server and
anything the server started end with it. Standard library only, so it starts fast in isolated mode (python -I).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

POLL_S = 0.2
GRACE_S = 10.0


def _end_group(child: subprocess.Popen[bytes]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + GRACE_S
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(POLL_S / 2)
    os.killpg(group, signal.SIGKILL)  # the stragglers, and this process too


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: watchdog.py PARENT_PID -- PROGRAM ARG...", file=sys.stderr)
        return 2
    parent = int(argv[1])
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        child = subprocess.Popen(argv[3:])
    except OSError as exc:
        print(f"watchdog: cannot start {argv[3]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    while True:
        code = child.poll()
        if code is not None:
            return code if code >= 0 else 128 - code
        if stop or os.getppid() != parent:
            _end_group(child)
            return 143
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
