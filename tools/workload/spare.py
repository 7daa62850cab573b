"""A warm candidate worker kept between trials: the workload built once, each candidate served a fresh copy of it with
its levers (runner.serve), so a trial costs its levers' own work (a compile, a capture, the legs), not another build
of the model (docs/decisions.md: A kept worker serves the next candidate). Between
candidates the kept worker holds only the workload as built: the last copy, its compiled code and graphs are
released (runner.release), so a fresh worker started meanwhile finds the device memory free.

Only levers that act on the built workload, or a setting put back after, are served (levers.SERVED_KINDS,
levers.unserved: compile, a graph, the attention backend, a stance, the static cache, the memory format, the decode
loop; TF32, cuDNN's benchmark mode, an Inductor setting). A candidate with an
environment variable, an overrides module or a knob changes the process or the build, so it gets a fresh worker, closed after its
trial; so does one after a trial that ended in a worker failure (a crash, a timeout: the worker is gone or suspect); a
candidate that raised in a worker still alive leaves that worker kept, once it released the copy and its device answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.levers import Lever, unserved
from hyperloom.tools.workload.process import Target, WorkloadFailure, WorkloadProcess, enter_together


def servable(levers: list[Lever]) -> bool:
    """Whether a kept worker can serve these levers (each acts on the built workload)."""
    return not unserved(lever.kind for lever in levers)


@dataclass(frozen=True)
class Where:
    """What a worker is started with besides its levers: the workload, the device and the limits."""

    target: Target
    workspace: Workspace
    timeout_s: float
    device: int | None = None
    backend: str = "cuda"


KEPT_AT_MOST = 2  # a campaign's stack reference and its next candidate, each served a copy (more would hold more device memory idle)


class Spare:
    """At most KEPT_AT_MOST kept workers, each for one target and device. `enabled` False: every candidate gets a fresh
    worker. A campaign's reference for a stack of levers is served from here too (`lend`), and given back when the
    stack moves on (`give_back`): the worker of the stack it replaces serves the next one, so a stack's reference costs
    its levers' work, not another build of the model. A served worker holds two copies of the workload (as built, and the one its
    levers act on): a served reference costs one copy of the model more device memory than a built one."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.kept: list[tuple[WorkloadProcess, Where]] = []  # oldest first
        self.turn = 1  # the last candidate's turn in its worker (1: a fresh build)

    def __enter__(self) -> Spare:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def process(self) -> WorkloadProcess | None:
        """The kept worker kept last (the next candidate's), or None when none is kept."""
        return self.kept[-1][0] if self.kept else None

    @property
    def pid(self) -> int | None:
        """The kept worker's process id (the one kept last), or None when none is kept."""
        return None if self.process is None else self.process.pid

    def close(self) -> None:
        for process, _ in self.kept:
            process.close()
        self.kept = []

    def beside(self, reference: WorkloadProcess, where: Where, folder: Path) -> None:
        """Build `reference` (not started yet) and, when this spare is enabled and empty, a kept worker for `where` with no
        levers, at once (process.enter_together): the first candidate (an A/A's second worker) is then served a copy
        instead of being built after the reference. A kept worker that failed to build or could not keep its workload
        is dropped (that candidate builds its own); the reference's failure is raised."""
        if not self.enabled or self.kept:
            reference.__enter__()
            return
        kept = WorkloadProcess(where.target, [], folder, where.workspace, where.timeout_s, device=where.device, backend=where.backend,
                               keep=True)
        for process in enter_together([reference], [kept]):
            if process.info["reusable"]:
                self._keep(process, where)
            else:
                process.close()

    @contextmanager
    def candidate(self, where: Where, levers: list[Lever], folder: Path, deadline_at: float | None) -> Iterator[WorkloadProcess]:
        """A worker with the candidate's levers in place: a kept one served a copy when it can, else a fresh one
        (kept after the trial when its levers allow). A trial that raises closes its worker, unless what it raised is
        the candidate's own exception, answered by a worker still alive (RAISED: sdpa_efficient's "No available
        kernel", a graph capture refused): that worker is kept when it then releases the copy and its device answers
        (runner.release synchronizes it: a sticky device fault fails there), so the next candidate is not built again."""
        keep, self.turn = self.enabled and servable(levers), 1
        process = self._served(where, levers, folder, deadline_at) if keep else None
        if process is None:
            process = WorkloadProcess(where.target, levers, folder, where.workspace, where.timeout_s, device=where.device,
                                      backend=where.backend, deadline_at=deadline_at, keep=keep)
            process.__enter__()
        self.turn = process.served
        try:
            yield process
        except WorkloadFailure as failure:
            self._after(process, where, keep and failure.status == "RAISED")
            raise
        except BaseException:
            process.close()
            raise
        self._after(process, where, keep)

    def lend(self, where: Where, levers: list[Lever], folder: Path) -> WorkloadProcess | None:
        """A kept worker serving a reference with `levers` (not started by the caller: it is built), or None when none
        can (disabled, a lever that changes the process, no kept worker for `where`): the caller builds one then."""
        if not (self.enabled and servable(levers)):
            return None
        return self._served(where, levers, folder, None)

    def give_back(self, process: WorkloadProcess, where: Where) -> None:
        """A reference's worker the caller is done with: kept for the next reference or candidate when it was built to
        keep its workload (`keep`), its levers can be served and it releases its copy; else closed."""
        self._after(process, where, self.enabled and process.keep and servable(process.levers))

    def _after(self, process: WorkloadProcess, where: Where, keep: bool) -> None:
        """The trial's worker kept for the next candidate (its copy released) when `keep` and it can be; else closed."""
        if keep and process.info["reusable"] and self._released(process):
            self._keep(process, where)
        else:
            process.close()

    def _keep(self, process: WorkloadProcess, where: Where) -> None:
        self.kept.append((process, where))
        while len(self.kept) > KEPT_AT_MOST:
            self.kept.pop(0)[0].close()

    @staticmethod
    def _released(process: WorkloadProcess) -> bool:
        """The last candidate's copy dropped, its device memory given back (a fresh worker for another candidate may
        need it while this one waits); False when the worker failed doing so (it is closed then)."""
        try:
            process.release()
        except WorkloadFailure:
            return False
        return True

    def _served(self, where: Where, levers: list[Lever], folder: Path, deadline_at: float | None) -> WorkloadProcess | None:
        """The kept worker for `where` (the one kept last) serving these levers, taken out of the spare; None when there
        is none or serving failed (the worker is closed: the caller builds afresh). Kept workers for another target (a
        sweep's point) are closed first: a fresh build may need their device memory."""
        matching = [item for item in self.kept if item[1] == where]
        for process, _ in [item for item in self.kept if item[1] != where]:
            process.close()
        self.kept = matching
        if not self.kept:
            return None
        process = self.kept.pop()[0]
        try:
            process.serve(levers, folder, deadline_at)
        except WorkloadFailure:
            process.close()
            return None
        return process
