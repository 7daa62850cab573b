"""A warm worker: one long-lived Python process that runs calls one after another.

run_worker starts a fresh process per call; a loop of thousands of short calls (tune's trials) then
spends most of its time starting Python, importing and opening a GPU context. A WarmWorker pays that
once and keeps run_worker's discipline for each call: a call that hangs is killed at its timeout
with the whole process group, a crash or an exit is an outcome with its reason, never an exception
of the caller. After a TIMEOUT, CRASH or EXITED the process is gone and the caller starts another.

The process exits by itself when its parent dies (a watchdog thread in hyperloom.core.warm_main), so
a killed loop leaves no worker behind, even one stuck in a hung kernel.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.family import family, kill_all
from hyperloom.core.worker import STDERR_CHARS, WorkerOutcome, _kill_group, died, outcome_of

_CLOSED = b"\0closed"  # not a line a worker can write: its answers are JSON
EXIT_WAIT_S = 10.0
"""How long a killed or finished worker may take to exit (a GPU context can take a moment to tear down)."""


class WarmWorker:
    """One worker process, started by start(); call() runs an entry in it. Not shared between threads."""

    def __init__(self, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.env, self.cwd = dict(env) if env is not None else None, cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._log_offset = 0
        self._requests = self._responses = -1
        self._pending = b""
        self._lock = threading.Lock()
        self.preload_error: str | None = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self, preload: str | None = None, payload: Mapping[str, Any] | None = None, *, timeout_s: float = 120.0) -> float:
        """Start the process and run `preload` ("module:function", e.g. imports and a GPU context) in it; returns
        the seconds it took. A preload that raises leaves a usable worker (`preload_error` says why); one that
        does not answer within `timeout_s` is an error."""
        started = time.perf_counter()
        requests_read, self._requests = os.pipe()
        self._responses, responses_write = os.pipe()
        self._log = _append_only_log()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "hyperloom.core.warm_main", str(requests_read), str(responses_write), str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(requests_read, responses_write),
                env=self.env, cwd=self.cwd, start_new_session=True,
            )
        except OSError as exc:
            self.close()
            raise HyperloomError(f"could not start a warm worker process ({exc.strerror})",
                                 "check that this Python can start subprocesses") from exc
        finally:
            os.close(requests_read)
            os.close(responses_write)
        outcome = self.call(preload or "hyperloom.core.warm_main:ready", dict(payload or {}), timeout_s=timeout_s)
        if outcome.status in ("TIMEOUT", "CRASH", "EXITED"):
            self.close()
            raise HyperloomError(f"a warm worker did not start: {outcome.describe()} {outcome.stderr[-400:]}".strip(),
                                 "run the same work with worker_mode fresh, or check the device with `hyperloom detect`")
        self.preload_error = None if outcome.ok else outcome.describe()
        return time.perf_counter() - started

    def call(self, entry: str, payload: Mapping[str, Any], *, timeout_s: float) -> WorkerOutcome:
        """Run `entry` with `payload` in the process; every ending is an outcome, as run_worker's."""
        with self._lock:
            started = time.perf_counter()
            if not self.alive:
                return self._ended(started)
            try:
                _write_all(self._requests, json.dumps({"entry": entry, "payload": dict(payload)}).encode() + b"\n")
            except OSError:  # the process died between calls (its pipe is closed)
                return self._ended(started)
            line = self._read_line(started + timeout_s)
            if line is None:  # no answer in time: a hang
                self._kill()
                return WorkerOutcome("TIMEOUT", message=f"did not finish within {timeout_s:g} s and was killed",
                                     stderr=self._output(), elapsed_s=time.perf_counter() - started)
            if line is _CLOSED:
                return self._ended(started)
            try:
                report = json.loads(line)
            except ValueError:
                self._kill()
                return WorkerOutcome("CRASH", message="the worker answered with something that is not JSON", stderr=self._output(),
                                     elapsed_s=time.perf_counter() - started)
            return outcome_of(report, self._output(), time.perf_counter() - started)

    def close(self) -> None:
        """End the process (its requests pipe closed, then the group killed, and every process it started that left the
        group: a detached child would otherwise run on beside every later leg) and free the pipes and log."""
        # before it exits and its children lose their parent
        escaped = family(self._proc.pid) if self.alive and self._proc is not None else []
        if self._requests >= 0:
            os.close(self._requests)
            self._requests = -1
        if self._proc is not None:
            try:
                self._proc.wait(timeout=0.5)  # it exits by itself at the end of its requests
            except subprocess.TimeoutExpired:
                pass
            self._kill(escaped)
        if self._responses >= 0:
            os.close(self._responses)
            self._responses = -1
        if self._log is not None:
            self._log.close()
            self._log = None

    # plumbing ------------------------------------------------------------------------------------
    def _kill(self, escaped: list[int] | None = None) -> None:
        """The group killed, and the family (`escaped`, taken earlier while the worker lived; else taken now)."""
        assert self._proc is not None
        escaped = escaped if escaped is not None else family(self._proc.pid) if self.alive else []
        _kill_group(self._proc.pid)
        kill_all(escaped)
        try:
            self._proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel (a GPU tearing down): reported, not waited for
            pass

    def _ended(self, started: float) -> WorkerOutcome:
        """The outcome of a process that is gone: its signal or exit code."""
        assert self._proc is not None
        try:
            self._proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self._kill()
        _kill_group(self._proc.pid)  # children it left behind die with it
        code = self._proc.returncode if self._proc.returncode is not None else -9
        return died(code, self._output(), time.perf_counter() - started)

    def _read_line(self, deadline: float) -> bytes | None:
        """The next response line; None at the deadline; _CLOSED when the process closed its end (it ended)."""
        while b"\n" not in self._pending:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            poller = select.poll()  # not select(): a long-lived server may hold descriptors past FD_SETSIZE
            poller.register(self._responses, select.POLLIN | select.POLLHUP | select.POLLERR)
            if not poller.poll(max(1, int(left * 1000))):
                continue
            chunk = os.read(self._responses, 1 << 16)
            if not chunk:
                return _CLOSED
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _output(self) -> str:
        """What the process printed since the last call (its tail)."""
        if self._log is None:
            return ""
        self._log.seek(0, os.SEEK_END)
        end = self._log.tell()
        self._log.seek(max(self._log_offset, end - STDERR_CHARS))
        text = self._log.read().decode(errors="replace")
        self._log_offset = end
        return text[-STDERR_CHARS:]


def _append_only_log() -> Any:
    """An anonymous file the process prints into: every write lands at its end (O_APPEND), whatever offset the
    parent's reads leave in the description they share."""
    fd, path = tempfile.mkstemp(prefix="hyperloom-warm-")
    os.unlink(path)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return os.fdopen(fd, "r+b")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
