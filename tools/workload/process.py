"""One workload in one warm worker process, driven from the caller: build it with a candidate's levers, then step,
time and read it, each call under a timeout. The worker side is tools/workload/worker/runner.py.

Every way the user's code can end (it raises, exits, crashes the interpreter, hangs, runs out of memory) is a
WorkloadFailure with its status and the tail of what the process printed; the caller's process never sees more.
A baseline and a candidate live in two such processes at once, so their legs can be interleaved.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from hyperloom.core.warm import WarmWorker
from hyperloom.core.worker import WorkerOutcome
from hyperloom.core.workspace import Workspace
from hyperloom.tools.runtime.visible import pinned_environ
from hyperloom.tools.workload.levers import Lever, environment
from hyperloom.tools.workload.wire import (PROFILER_ENVIRON, RUNNER, BuildAnswer, BuildRequest, EngagementAnswer, EngagementRequest, Info,
                                          LeverPayload, OutputsAnswer, SavedOutput, SaveTimedAnswer, ScoreAnswer, ServeAnswer,
                                          TeacherRequest, TimeStepsAnswer, TimeStepsRequest, TraceAnswer, TwinAnswer, WarmupAnswer)

MIN_CALL_S = 1.0  # the least a call gets past a deadline: a worker is not killed before it can answer
CUT = "cut at the campaign's deadline"  # how a call the deadline cut names itself (a campaign does not record that trial)
OUTPUT_TAIL_CHARS = 600
ROUND_TRIPS = 5


class WorkloadFailure(Exception):
    """A worker call that did not return: status (RAISED, EXITED, CRASH, TIMEOUT), message and the output's tail."""

    def __init__(self, status: str, step: str, outcome: WorkerOutcome) -> None:
        self.status, self.step = status, step
        tail = outcome.stderr.strip()[-OUTPUT_TAIL_CHARS:]
        self.message = f"{step}: {outcome.describe()}" + (f"; its last output: {tail}" if tail and status != "RAISED" else "")
        self.error_type = outcome.error_type
        super().__init__(self.message)


@dataclass(frozen=True)
class Target:
    """What to build: the workload as the worker loads it."""

    workload: str
    kind: str  # "script" or "function"
    args: tuple[str, ...]
    knobs: dict[str, str]


class WorkloadProcess:
    """A built workload in its own process. Use as a context manager; close() kills the process group."""

    def __init__(self, target: Target, levers: list[Lever], folder: Path, workspace: Workspace, timeout_s: float, device: int | None = None,
                 backend: str = "cuda", deadline_at: float | None = None, keep: bool = False) -> None:
        """`device`: the GPU (as this process numbers them) the worker is pinned to, through `backend`'s visible-devices
        variable (cuda or hip); None leaves the environment's. `keep`: the worker keeps the workload as built, so it can
        `serve` further candidates (info's `reusable` says whether it could)."""
        self.target, self.levers, self.folder, self.workspace, self.timeout_s = target, levers, folder, workspace, timeout_s
        self.keep, self.served = keep, 1  # served: the candidates this worker has been built or served for
        self.folder.mkdir(parents=True, exist_ok=True)
        env = pinned_environ({**os.environ, **environment(levers, str(folder)), **PROFILER_ENVIRON}, backend, device)
        self.worker = WarmWorker(env=env, cwd=workspace.root)
        self.info: Info = cast(Info, {})  # the build's answer (wire.Info), once __enter__ built the workload
        self.deadline_at = deadline_at  # time.monotonic(): no call runs past it (a campaign's deadline; _call)
        self._round_trip_s: float | None = None
        self.inputs_seen: set[str] = set()  # what its inputs(seed) ran in its timed legs (calls.py), for this candidate
    def __enter__(self) -> WorkloadProcess:
        self.worker.start(timeout_s=self.timeout_s)
        try:
            self.info = self._build()
        except BaseException:
            self.close()  # __exit__ does not run when __enter__ raises
            raise
        return self

    def _build(self) -> Info:
        request: BuildRequest = {
            "workload": self.target.workload, "kind": self.target.kind, "args": list(self.target.args), "root": str(self.workspace.root),
            "knobs": dict(self.target.knobs), "folder": str(self.folder),
            "levers": _payload(self.levers), "keep": self.keep,
        }
        built: BuildAnswer = self._call("build_guarded", request, step="build")
        return cast(Info, built)

    def serve(self, levers: list[Lever], folder: Path, deadline_at: float | None) -> Info:
        """Give this worker's kept workload to another candidate (runner.serve): a fresh copy with `levers` applied;
        `folder` is the candidate's. Returns the build's info as the new candidate sees it."""
        self.levers, self.folder, self.deadline_at = levers, folder, deadline_at
        self.inputs_seen = set()
        self.folder.mkdir(parents=True, exist_ok=True)
        served: ServeAnswer = self._call("serve", {"levers": _payload(levers), "folder": str(folder)}, step="build (a served copy)")
        self.info = cast(Info, {**self.info, **served})
        self.served += 1
        return self.info

    def release(self) -> None:
        """Drop the last candidate's copy of the workload and its compiled code (runner.release): a kept worker waits
        for its next candidate holding only the workload as built."""
        self._call("release", {})

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.worker.close()

    @property
    def pid(self) -> int | None:
        return self.worker.pid

    def warmup(self, steps: int) -> WarmupAnswer:
        return self._call("warmup", {"steps": steps})

    def time(self, steps: int, seeds: list[int] | None = None, keep_all: bool = True) -> TimeStepsAnswer:
        """`steps` timed windows (runner.time_steps); with `seeds`, one step per seed, each after inputs(seed); every step's
        outputs kept for save_timed where `keep_all` and they fit, else the last's."""
        payload: TimeStepsRequest = {"steps": steps if seeds is None else len(seeds), "keep_all": keep_all}
        if seeds is not None:
            payload["seeds"] = list(seeds)
        told: TimeStepsAnswer = self._call("time_steps", payload)
        self.inputs_seen.update(told["inputs_calls"])
        return told

    def save_timed(self, folder: Path, step: int | None = None) -> SaveTimedAnswer:
        """Step `step`'s outputs of the last leg (default its last) saved in `folder` (runner.save_timed), off the leg's
        clock; {outputs, tampered}."""
        return self._call("save_timed", {"folder": str(folder), "step": step})

    def round_trip_s(self) -> float:
        """The seconds an empty call takes here and back (the fastest of a few, measured once): what the controller's
        clock takes off each timed leg."""
        if self._round_trip_s is None:
            calls = []
            for _ in range(ROUND_TRIPS):
                began = time.perf_counter()
                self._call("ping", {})
                calls.append(time.perf_counter() - began)
            self._round_trip_s = min(calls)
        return self._round_trip_s

    def outputs(self, folder: Path, teacher: dict[str, TeacherRequest] | None = None) -> dict[str, SavedOutput]:
        """Save the last step's outputs in `folder`; `teacher`: tokens name -> {ids, prompt} to score (runner.outputs).
        Why the step's generate was not greedy, when it was not, is kept in info["not_greedy"]."""
        saved: OutputsAnswer = self._call("outputs", {"folder": str(folder), "teacher": teacher or {}})
        self.info = cast(Info, {**self.info, "not_greedy": saved.get("not_greedy")})
        return saved["outputs"]

    def score(self, folder: Path, teacher: dict[str, TeacherRequest], inputs: str | None = None) -> ScoreAnswer:
        """This worker's model's logits for other tokens (runner.score): NAME.scored.npy in `folder`, the EOS and pad ids;
        `inputs` "built": the tokens came from the workload's inputs as built."""
        return self._call("score", {"folder": str(folder), "teacher": teacher, "inputs": inputs})

    def seeded_outputs(self, folder: Path, seeds: list[int], teacher_own: dict[str, str] | None = None,
                       teacher: list[dict[str, TeacherRequest] | None] | None = None) -> None:
        """One step per seed after inputs(seed), each step's outputs saved in `folder`/seed{i} (runner.seeded_outputs);
        with teacher-forced logits: of its own tokens (`teacher_own`: tokens name -> top-k ids' name) or of the
        tokens `teacher` gives for each seed."""
        self._call("seeded_outputs", {"folder": str(folder), "seeds": list(seeds), "teacher_own": teacher_own or {}, "teacher": teacher})

    def twin(self, folder: Path, teacher: dict[str, TeacherRequest] | None = None) -> TwinAnswer:
        """Upcast this worker's workload in place and save its twin's outputs (runner.twin): the worker is the twin after."""
        return self._call("twin", {"folder": str(folder), "teacher": teacher or {}})

    def engagement(self, trace: Path | None = None, seed: int | None = None) -> EngagementAnswer:
        """One step profiled as a timed step (runner.engagement): after inputs(`seed`) when given; with `trace`, the
        Chrome trace with shapes written there and the model's parameter bytes reported (proof of work)."""
        payload: EngagementRequest = {} if trace is None else {"trace": str(trace)}
        if seed is not None:
            payload["seed"] = seed
        return self._call("engagement", payload)

    def trace(self, trace: Path, key_averages: Path, steps: int) -> TraceAnswer:
        """`steps` steps under torch.profiler, the Chrome trace and key_averages' device rows written (runner.trace)."""
        return self._call("trace", {"trace": str(trace), "key_averages": str(key_averages), "steps": steps})

    def _call(self, entry: str, payload: Any, step: str | None = None) -> Any:
        """One call of the worker, under timeout_s and, when set, what is left to `deadline_at` (time.monotonic; a
        campaign's wall-clock deadline cuts a running trial: the worker is killed, the call is a TIMEOUT saying so). `entry`
        is one of wire.ENTRIES, `payload` its request; the answer is its answer type."""
        timeout_s, cut = self.timeout_s, False
        if self.deadline_at is not None and self.deadline_at - time.monotonic() < timeout_s:
            timeout_s, cut = max(MIN_CALL_S, self.deadline_at - time.monotonic()), True
        outcome = self.worker.call(f"{RUNNER}:{entry}", payload, timeout_s=timeout_s)
        if not outcome.ok:
            named = f"{step or entry}, {CUT}" if cut and outcome.status == "TIMEOUT" else step or entry
            raise WorkloadFailure(outcome.status, named, outcome)
        return outcome.result


def enter_together(processes: Sequence[WorkloadProcess], optional: Sequence[WorkloadProcess] = ()) -> list[WorkloadProcess]:
    """Start and build every process at once, each in its own worker: a model's build is mostly its host's work, so N
    builds take about the longest of them, not their sum (docs/decisions.md: Builds started together). Returns those of `optional` that
    built (one that failed is closed); a failure of one of `processes` closes every one and is raised (the first, in the order given)."""
    everyone = [*processes, *optional]
    failures: list[BaseException | None] = [None] * len(everyone)

    def build(index: int) -> None:
        try:
            everyone[index].__enter__()  # closes its own worker when it raises
        except BaseException as exc:  # noqa: BLE001 - raised below, in the caller's thread
            failures[index] = exc

    threads = [threading.Thread(target=build, args=(index,), name=f"workload-build-{index}", daemon=True) for index in range(len(everyone))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first = next((failure for failure in failures[: len(processes)] if failure is not None), None)
    if first is not None:
        for process in everyone:
            process.close()
        raise first
    return [process for process, failure in zip(optional, failures[len(processes):], strict=True) if failure is None]


def _payload(levers: list[Lever]) -> list[LeverPayload]:
    return [{"name": lever.name, "kind": lever.kind, "value": lever.value} for lever in levers]
