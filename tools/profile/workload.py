"""Run a user's workload under torch.profiler in a worker process, or say clearly why it did not finish."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workload_source import refuse_factory_module_as_script, refuse_missing_function
from hyperloom.core.worker import WorkerOutcome, run_worker
from hyperloom.core.workspace import Workspace

ENTRY = "hyperloom.tools.profile.capture:capture"
FUNCTION_NAME = re.compile(r"^[A-Za-z_]\w*$")
MODULE_FUNCTION = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
STDERR_TAIL_CHARS = 600


@dataclass
class Capture:
    """What the worker reports about a finished run."""

    trace: Path
    key_averages: Path
    torch_version: str
    toolchain: dict[str, str]
    gpu_seen: bool
    device: str | None
    step_wall_s: list[float]
    profiler_device_time_s: float | None
    extra: dict[str, Any] = field(default_factory=dict)


def file_function(workload: str, workspace: Workspace) -> str | None:
    """'absolute path.py:function' for a factory in a file (file.py:function, as workload freeze and profile take it),
    None for any other form; a name after the colon that is no function name, or that the file does not define, is
    refused (the latter with the file's callables and the closest)."""
    where, colon, function = workload.rpartition(":")
    if not (colon and where.endswith(".py")):
        return None
    path = workspace.resolve(where, kind="file", what="workload")
    if not FUNCTION_NAME.match(function):
        raise HyperloomError(f"{function[:60]!r} is not a function name", "pass file.py:function")
    refuse_missing_function(path, function, workload)
    return f"{path}:{function}"


def describe_workload(workload: str, workspace: Workspace) -> tuple[str, str]:
    """('script', absolute path), ('file_function', 'absolute path.py:function': a factory in a file, as workload
    freeze takes it) or ('function', 'module:function'); anything else is refused."""
    in_file = file_function(workload, workspace)
    if in_file is not None:
        return "file_function", in_file
    if workload.endswith(".py") or "/" in workload or ":" not in workload:
        path = workspace.resolve(workload, kind="file", must_exist=True, what="workload")
        if path.suffix != ".py":
            raise HyperloomError(f"workload {workload!r} is not a Python script (.py)", "pass a .py file, or 'module:function'")
        refuse_factory_module_as_script(path, workload)
        return "script", str(path)
    if not MODULE_FUNCTION.match(workload):
        raise HyperloomError(f"workload {workload!r} is neither a script path nor 'module:function'",
                             "pass e.g. 'train.py', or 'mypackage.bench:step' (importable from the workspace root)")
    return "function", workload


def _refuse(workload: str, outcome: WorkerOutcome, timeout_s: float) -> HyperloomError:
    tail = outcome.stderr.strip()[-STDERR_TAIL_CHARS:]
    said = f"; its last output: {tail}" if tail and outcome.status in ("CRASH", "EXITED") else ""
    if outcome.status == "TIMEOUT":
        return HyperloomError(f"the workload {workload} {outcome.message} (warm-up and recorded steps together)",
                              f"profile fewer or shorter steps, or raise timeout_s above {timeout_s:g}")
    if outcome.error_type == "ProfilerUnavailable":
        return HyperloomError(f"profiling needs torch in this Python: {outcome.message.split(': ', 1)[-1]}",
                              "pip install torch (a CUDA or ROCm build for a GPU), or pass trace= with a trace captured elsewhere")
    if outcome.error_type in ("ModuleNotFoundError", "AttributeError") and ":" in workload and not workload.endswith(".py"):
        return HyperloomError(f"the workload {workload} cannot be loaded: {outcome.message}",
                              "check the module path (importable from the workspace root) and the function's name")
    if outcome.status == "EXITED":
        return HyperloomError(f"the workload {workload} ended its process: {outcome.describe()}{said}",
                              "a step must return (sys.exit(0) at the end of a script is fine); remove the exit or fix what made it fail")
    if outcome.status == "CRASH":
        return HyperloomError(f"the workload {workload} crashed the worker: {outcome.describe()}{said}",
                              "run it alone to find the crash (an extension's segfault, or out of memory)")
    return HyperloomError(f"the workload {workload} raised {outcome.describe()}",
                          "fix the error (run it alone to see the traceback), then profile again")


def capture_workload(workload: str, args: list[str], steps: int, warmup_steps: int, timeout_s: float, folder: Path,
                     workspace: Workspace, profile: bool = True, knobs: dict[str, str] | None = None) -> Capture:
    """Run the workload's steps in a fresh worker (killed at `timeout_s`); the trace lands in `folder`. `knobs`: a
    factory's keyword arguments as text, as workload freeze records them (optimize profiles a frozen workload so)."""
    kind, target = describe_workload(workload, workspace)
    trace, averages = folder / "trace.json", folder / "key_averages.json"
    payload = {"workload": target, "kind": kind, "args": list(args), "root": str(workspace.root), "steps": steps,
               "warmup_steps": warmup_steps, "trace": str(trace), "key_averages": str(averages), "profile": profile,
               "knobs": dict(knobs or {})}
    outcome = run_worker(ENTRY, payload, timeout_s=timeout_s, cwd=workspace.root)
    if not outcome.ok:
        raise _refuse(workload, outcome, timeout_s)
    if profile and not trace.is_file():
        raise HyperloomError(f"the workload {workload} finished but torch.profiler wrote no trace",
                             "check that nothing in the workload stops or replaces the profiler (a nested torch.profiler.profile)")
    return capture_of(outcome.result, trace, averages)


def capture_of(report: dict[str, Any], trace: Path, averages: Path) -> Capture:
    """A Capture from the report of capture.record (this module's worker, or the workload runner's `trace` entry)."""
    toolchain = {"torch": str(report["torch"])}
    for key in ("cuda", "hip"):
        if report.get(key):
            toolchain[key] = str(report[key])
    return Capture(trace, averages, str(report["torch"]), toolchain, bool(report["gpu"]), report.get("device"),
                   [float(v) for v in report["step_wall_s"]], report.get("profiler_device_time_s"),
                   {"warmup_wall_s": report.get("warmup_wall_s", []), "kernel_bytes": dict(report.get("kernel_bytes") or {}),
                    **{key: report[key] for key in ("copy_gb_s", "copy_bytes", "copy_skipped", "kv_read_bytes_per_replay")
                            if key in report}})
