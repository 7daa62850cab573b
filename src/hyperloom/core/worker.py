"""The one rule for user code: it runs in a fresh Python process with a wall-clock timeout.

A reference function, a host kernel, a Triton module or a workload script may raise, call
`sys.exit`, crash the interpreter or hang. Each is an answer with its reason here, never a
crash, a hang or a changed state of the caller (the MCP server, the tune loop).

`run_worker("package.module:function", payload, timeout_s=…)` starts
`python -m hyperloom.core.worker_main`, which imports the function, calls it with the payload
(a JSON object) and writes back its JSON result. The whole process group is killed at the
timeout, so a user's child processes die with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hyperloom.core.errors import HyperloomError

WorkerStatus = Literal["OK", "RAISED", "EXITED", "CRASH", "TIMEOUT"]
STDERR_CHARS = 4000


@dataclass(frozen=True)
class WorkerOutcome:
    """How a worker ended: OK with its result, or why not (the user's exception, exit code, signal, timeout)."""

    status: WorkerStatus
    result: Any = None
    message: str = ""
    error_type: str = ""
    where: str = ""  # the innermost frame of user code (file:line) for RAISED
    stderr: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    def describe(self) -> str:
        """One line: what happened, for a caller's error message."""
        if self.ok:
            return "finished"
        where = f" at {self.where}" if self.where else ""
        return f"{self.message}{where}"


def run_worker(
    entry: str,
    payload: Mapping[str, Any],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> WorkerOutcome:
    """Call `entry` ("module:function", a function of ours that takes the payload) in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="hyperloom-worker-") as tmp:
        request_path, result_path = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request_path.write_text(json.dumps({"entry": entry, "payload": dict(payload)}))
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "hyperloom.core.worker_main", str(request_path), str(result_path)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True,
            )
        except OSError as exc:
            raise HyperloomError(f"could not start a worker process ({exc.strerror})",
                                 "check that this Python can start subprocesses") from exc
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            stdout, stderr = proc.communicate()
            return WorkerOutcome("TIMEOUT", message=f"did not finish within {timeout_s:g} s and was killed",
                                 stderr=_tail(stdout, stderr), elapsed_s=time.perf_counter() - started)
        finally:
            _kill_group(proc.pid)  # children the user's code left behind die with the worker
        elapsed_s = time.perf_counter() - started
        report = _read(result_path)
        if report is None:
            return died(proc.returncode, _tail(stdout, stderr), elapsed_s)
        return outcome_of(report, _tail(stdout, stderr), elapsed_s)


def died(returncode: int, output: str, elapsed_s: float) -> WorkerOutcome:
    """The outcome of a worker that ended without a report: killed by a signal (CRASH) or exited (EXITED)."""
    if returncode < 0:
        return WorkerOutcome("CRASH", message=f"the worker died with signal {_signal_name(-returncode)}", stderr=output,
                             elapsed_s=elapsed_s)
    return WorkerOutcome("EXITED", message=f"the worker exited with code {returncode} before returning a result", stderr=output,
                         elapsed_s=elapsed_s)


def outcome_of(report: dict[str, Any], output: str, elapsed_s: float) -> WorkerOutcome:
    """The outcome of a call that returned its report (worker_main.call_entry's): OK, or the raise or exit it reports."""
    if report.get("ok"):
        return WorkerOutcome("OK", result=report.get("result"), stderr=output, elapsed_s=elapsed_s)
    status: WorkerStatus = "EXITED" if report.get("error_type") == "SystemExit" else "RAISED"
    return WorkerOutcome(status, message=str(report.get("message", "")), error_type=str(report.get("error_type", "")),
                         where=str(report.get("where", "")), stderr=(output + str(report.get("traceback", "")))[-STDERR_CHARS:],
                         elapsed_s=elapsed_s)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _tail(stdout: str, stderr: str) -> str:
    return (stdout + stderr)[-STDERR_CHARS:]
