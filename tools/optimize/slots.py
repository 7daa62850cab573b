"""Where a campaign's measurements run: one slot per device (a GPU it may use, or the CPU), each with its own live
reference workers (the baseline, and the stack of kept levers), so independent candidates run at once, one per
device, each A/B-timed beside a reference on its own device. Parallel slots spend the device-hour budget sooner;
they do not raise it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json
from hyperloom.core.stopwatch import PartClock
from hyperloom.core.workspace import Workspace
from hyperloom.tools.tune.devices import idle_gpus
from hyperloom.tools.workload.ab import ABSettings, saved_outputs, target_with
from hyperloom.tools.workload.gate.frozen import Frozen, compare, references
from hyperloom.tools.workload.levers import prepared
from hyperloom.tools.workload.process import WorkloadProcess
from hyperloom.tools.workload.checks.proof import reference_evidence
from hyperloom.tools.workload.spare import Spare, Where
from hyperloom.tools.workload.wire import Info

BACKENDS = {"cuda": "cuda", "rocm": "hip"}
Charge = Callable[[list[str], dict[str, str] | None, dict[str, float]], None]
"""Told each reference worker's start: its levers, its point and its seconds by part (build, warm-up, outputs, profile)."""
LIVE_REFERENCES = 2  # the baseline and the current stack; another is started on demand
T = TypeVar("T")


def device_slots(vendor: str, devices: list[int] | None) -> list[int | None]:
    """One slot per device: the GPUs asked for, else every idle one (the first when none answers); the CPU: one slot."""
    if vendor == "cpu":
        return [None]
    return list(dict.fromkeys(devices or idle_gpus(BACKENDS[vendor]) or [0]))


@dataclass
class Reference:
    """A live reference worker: built with `levers` at `point`, warmed, its outputs saved and its evidence read."""

    levers: list[str]
    point: dict[str, str] | None
    process: WorkloadProcess
    evidence: dict[str, Any]
    outputs: Path
    info: Info
    where: Where  # what it was started for: a kept worker given back serves only that


class Slot:
    """One device and its reference workers. Not shared between threads: the campaign hands each slot one job at a time."""

    def __init__(self, device: int | None, frozen: Frozen, settings: ABSettings, folder: Path, workspace: Workspace,
                 charge: Charge) -> None:
        self.device, self.frozen, self.settings, self.folder, self.workspace, self.charge = (device, frozen, settings, folder, workspace,
                                                                                             charge)
        self.backend = BACKENDS.get(frozen.vendor, "cuda")
        self.label = "cpu" if device is None else f"gpu {device}"
        self.live: dict[str, Reference] = {}
        self.spare = Spare()  # a kept candidate worker: the next candidate is served a copy of the workload, not built again

    def reference(self, levers: list[str], point: dict[str, str] | None = None) -> Reference:
        """The reference worker for `levers` at `point`, started (its time charged) unless it is live already. A stack's
        reference is served by a kept worker where one is (the worker of the stack it replaces, given back): its start
        costs the levers' work, not a build of the model; the baseline is always built, beside the first kept worker."""
        key = sha256_json([sorted(levers), point])[:16]
        if key in self.live:
            return self.live[key]
        for stale in [k for k, r in self.live.items() if r.levers or r.point][: max(0, len(self.live) - LIVE_REFERENCES + 1)]:
            retired = self.live.pop(stale)
            self.spare.give_back(retired.process, retired.where)
        chosen = prepared(levers, self.frozen.vendor, self.frozen.declared_knobs, self.workspace)
        folder = self.folder / f"reference-{key}"
        clock = PartClock()
        target = target_with(self.frozen.target, chosen, point)
        where = Where(target, self.workspace, self.settings.timeout_s, self.device, self.backend)
        began = time.perf_counter()
        process = self.spare.lend(where, chosen, folder) if levers or point is not None else None
        try:
            if process is not None:
                clock.add("served by a kept worker", time.perf_counter() - began)
            else:
                # built without a kept copy (one copy of the model on the device, as before serving): only a worker that was
                # kept to serve (the pool's) is given back when its stack retires
                process = WorkloadProcess(target, chosen, folder, self.workspace, self.settings.timeout_s, device=self.device,
                                          backend=self.backend)
                with clock.timing("build"):
                    if levers or point is not None:
                        process.__enter__()
                    else:  # the baseline: the first candidate's worker built beside it
                        self.spare.beside(process, where, self.folder / "spare")
            with clock.timing("warm-up"):
                process.warmup(self.settings.warmup_steps)
            with clock.timing("outputs"):
                frozen = references(self.frozen)
                outputs = saved_outputs(process, folder / "outputs", frozen if point is None else None)
                if not levers and point is None:
                    checks = compare(outputs, frozen, self.frozen.tolerances)
                    if not all(c.passed for c in checks):
                        raise HyperloomError("the baseline no longer matches its frozen outputs: "
                                             + "; ".join(f"{c.output}: {c.detail}" for c in checks if not c.passed)[:500],
                                             "freeze the workload again (workload freeze, overwrite) and start a new session, or "
                                             "find what changed")
            with clock.timing("profile"):
                evidence = reference_evidence(process, folder / "profiled", self.workspace)
        except BaseException:
            process.close()
            raise
        finally:
            self.charge(levers, point, clock.parts_s)
        self.live[key] = Reference(levers, point, process, evidence, outputs, process.info, where)
        return self.live[key]

    def close(self) -> None:
        for ref in self.live.values():
            ref.process.close()
        self.live.clear()
        self.spare.close()


class Slots:
    """The campaign's slots; run_many spreads independent jobs over them, one job per slot at a time."""

    def __init__(self, devices: list[int | None], frozen: Frozen, settings: ABSettings, folder: Path, workspace: Workspace,
                 charge: Charge) -> None:
        self.slots = [Slot(d, frozen, settings, folder / ("cpu" if d is None else f"gpu{d}"), workspace, charge) for d in devices]

    @property
    def first(self) -> Slot:
        return self.slots[0]

    def __enter__(self) -> Slots:
        return self

    def __exit__(self, *exc: object) -> None:
        for slot in self.slots:
            slot.close()

    def run_many(self, jobs: list[T], run: Callable[[Slot, T], list[T]], check: Callable[[], None]) -> None:
        """Run every job on the first free slot; the jobs a run returns (its follow-ups) go first in the queue. `check`
        (a stop rule, raising) runs before each job starts. The first exception stops the hand-out; jobs in flight
        finish; it is raised once every slot is idle."""
        pending = list(jobs)
        lock = threading.Lock()
        failures: list[BaseException] = []

        def worker(slot: Slot) -> None:
            while True:
                with lock:
                    if failures or not pending:
                        return
                    try:
                        check()
                    except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                        failures.append(exc)
                        return
                    job = pending.pop(0)
                try:
                    follow = run(slot, job)
                    with lock:
                        pending[:0] = follow
                except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                    with lock:
                        failures.append(exc)
                    return

        if len(self.slots) == 1:
            worker(self.first)
        else:
            threads = [threading.Thread(target=worker, args=(slot,), name=f"optimize-{slot.label}", daemon=True) for slot in self.slots]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]
