"""Where a candidate's time goes, phase by phase, and the session's sums of it (breakdown.json's `run`).

A candidate's phases add up to its own wall time (compile start to verdict, less any wait for a free
device): compile and rules on a CPU core, then its worker launches split into process_start (a
process started and handed the trial, or a warm one handed it), stage (driver, code object, inputs
copied in), gate (the kernel on each input set, outputs read back; a GPU worker also compares them
with the frozen references there: tools/gate/outputs.py) or time (the timing loop, and finding its
device helpers), then compare (the loop's process: a host kernel's outputs against the references,
and building each launch's request) and other (scratch folders).
process_start + stage + gate + compare + time is the candidate's device_s, the budget's measure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hyperloom.tools.runtime.models import TrialRequest, TrialResult

PHASES = ("compile", "rules", "process_start", "stage", "gate", "compare", "time", "other")
DIGITS = 6


@dataclass
class _Launch:
    mode: str
    wall_s: float
    result: TrialResult


@dataclass
class PhaseClock:
    """A candidate's phase seconds, filled as it goes through the pipeline."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    _launches: list[_Launch] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += max(seconds, 0.0)

    def recording(self, runner: Callable[..., TrialResult]) -> Callable[..., TrialResult]:
        """`runner`, with each launch's wall time and result noted for settle()."""

        def run(request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
            started = time.perf_counter()
            result = runner(request, timeout_s=timeout_s, device=device)
            with self._lock:
                self._launches.append(_Launch(request.mode, time.perf_counter() - started, result))
            return result

        return run

    def settle(self, used_s: float) -> None:
        """Split `used_s`, the budget's measure of one step (a launch and what the loop did around it), into phases."""
        with self._lock:
            launches, self._launches = self._launches, []
        walls = 0.0
        for launch in launches:
            child = min(max(launch.result.elapsed_s, 0.0), launch.wall_s)  # time inside the worker's trial function
            stage = min(max(launch.result.stage_s, 0.0), child)
            self.add("process_start", launch.wall_s - child)
            self.add("stage", stage)
            self.add("gate" if launch.mode == "correctness" else "time", child - stage)
            walls += launch.wall_s
        timed = any(launch.mode == "timing" for launch in launches)
        self.add("time" if timed else "compare" if launches else "other", used_s - walls)  # around a timing launch: finding its helpers

    def rounded(self) -> dict[str, float]:
        return {phase: round(seconds, DIGITS) for phase, seconds in self.seconds.items()}


def run_summary(trials: list[Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """breakdown.json's `run`: candidates per hour over the loops' wall time, phase sums, each device's share of work,
    and what the worker processes cost; from the trials (TrialRecord) and the loop's runs (ledger meta `runs`)."""
    wall_s = sum(r.get("loop_wall_s", 0.0) for r in runs)
    timed = [t for t in trials if t.phases_s]
    totals = {phase: round(sum(t.phases_s.get(phase, 0.0) for t in timed), DIGITS) for phase in PHASES}
    devices: dict[str, dict[str, Any]] = {}
    for t in trials:
        entry = devices.setdefault(_label(t), {"device": _label(t), "device_index": t.device_index, "candidates": 0, "passed": 0, "busy_s": 0.0})
        entry["candidates"] += 1
        entry["passed"] += t.status == "PASSED"
        entry["busy_s"] = round(entry["busy_s"] + t.device_s, DIGITS)
    for entry in devices.values():
        entry["busy_share"] = round(entry["busy_s"] / wall_s, 4) if wall_s > 0 else None
    last = runs[-1] if runs else {}
    return {
        "worker_mode": last.get("worker_mode"), "compile_ahead": last.get("compile_ahead"), "slots": last.get("slots", []),
        "loop_wall_s": round(wall_s, DIGITS), "candidates": sum(r.get("candidates", 0) for r in runs),
        "candidates_per_hour": round(sum(r.get("candidates", 0) for r in runs) / wall_s * 3600, 1) if wall_s > 0 else None,
        "phases_s": totals, "phases_per_candidate_s": {p: round(v / len(timed), DIGITS) for p, v in totals.items()} if timed else {},
        "devices": sorted(devices.values(), key=lambda d: d["device"]),
        "workers": [r.get("workers", {}) for r in runs],
    }


def _label(trial: Any) -> str:
    """A trial's device: its GPU, a CPU worker, or the compiler for a candidate rejected before any device ran it."""
    if trial.worker < 0:
        return "compiler"
    return "cpu" if trial.device_index is None else f"gpu {trial.device_index}"
