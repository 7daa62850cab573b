"""bench_command: time any program that reports its own samples (a PyTorch script, a vendor benchmark).

The program is the caller's: it runs with the caller's rights, in the workspace root, as an
argument list (no shell), its whole process group killed at the timeout. Its last JSON line must
hold samples_s; Hyperloom summarizes them and records where they came from. Nothing is gated:
a command's speed says nothing about its correctness.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchCommandRequest, BenchResult
from hyperloom.tools.bench.stats import summarize

REPORT_EXAMPLE = '{"samples_s": [0.00105, 0.00101, ...], "bytes": 1048576}'


def run_bench_command(request: BenchCommandRequest, workspace: Workspace, progress: ProgressFn | None = None) -> BenchResult:
    del progress  # one program run; it reports nothing along the way
    if any("\x00" in part for part in request.command):
        raise HyperloomError("the command contains a NUL byte", "pass plain argument strings")
    stdout, stderr, returncode = _run(request.command, request.timeout_s, workspace)
    report = next((line for line in reversed(stdout.strip().splitlines()) if line.lstrip().startswith("{")), None)
    if returncode != 0 or report is None:
        raise HyperloomError(
            f"the command exited {returncode} without a JSON result line ({stderr.strip()[-300:] or 'no stderr'})",
            f"print one JSON line such as {REPORT_EXAMPLE} last",
        )
    try:
        data = json.loads(report)
        samples = [float(s) for s in data["samples_s"]]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise HyperloomError(f"the command's last JSON line has no list of numbers samples_s ({str(exc)[:120]})", f"print {REPORT_EXAMPLE}") from exc
    if not samples:
        raise HyperloomError("the command reported no samples", "report at least one sample in samples_s")
    if not all(math.isfinite(s) and s > 0 for s in samples):
        raise HyperloomError("the command reported a sample that is not a positive finite number of seconds", "report each repetition's time in seconds")
    bytes_moved, flops = _count(data, "bytes"), _count(data, "flops")
    kernel = summarize(samples)
    return BenchResult(
        ok=True, summary=f"{' '.join(request.command)[:60]}: median {kernel.median_s * 1e6:.2f} us over {kernel.n} samples (reported by the command)",
        name=os.path.basename(request.command[0]), variant=None, target=request.target, backend="command", device=str(data.get("device", ""))[:200],
        shape={}, gate=[], kernel=kernel, wall=None, kernel_to_wall=None, bytes_moved=bytes_moved, flops=flops,
        bandwidth_gbps=bytes_moved / kernel.median_s / 1e9 if bytes_moved else None,
        tflops=flops / kernel.median_s / 1e12 if flops else None, flush_bytes=0, cache_bytes=0,
        state_before=None, state_after=None, artifacts=None,
        evidence=measured("bench_command", inputs_sha256=sha256_json({"command": request.command, "report": data}), target=request.target,
                          device=str(data.get("device") or "")[:200] or None),
    )


def _run(command: list[str], timeout_s: float, workspace: Workspace) -> tuple[str, str, int]:
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                cwd=workspace.root, start_new_session=True)
    except FileNotFoundError as exc:
        raise HyperloomError(f"{command[0][:80]!r} was not found", "pass an argument list whose first item is an executable (a name on PATH or a path)") from exc
    except OSError as exc:  # a folder, a file without execute permission, a binary for another machine
        raise HyperloomError(f"{command[0][:80]!r} cannot be run ({exc.strerror})", "pass an executable program as the first item") from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise HyperloomError(f"the command did not finish within {timeout_s:g} s and was killed", "shorten its run or raise timeout_s") from exc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # nothing it started outlives it
        except (ProcessLookupError, PermissionError):
            pass
    return stdout, stderr, proc.returncode


def _count(data: dict, key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise HyperloomError(f"the command's {key} is {str(value)[:40]}, not a count", f"report {key} as a non-negative number")
    return int(value)
