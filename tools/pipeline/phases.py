"""Where a candidate's time goes, phase by phase, as it goes through the pipeline.

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
