"""Secret input sets: what a candidate's timed launches run on, drawn from seeds no candidate can know.

Two sets are drawn after the candidate is built (bench) or when a tune loop starts (every candidate of that run
shares them): `timed` feeds every timed launch, `fresh` one launch after them. Their seeds come from the operating
system's entropy and are never written down. They live in a folder of their own under .hyperloom/secret (mode 700),
removed when the evaluation ends. A GPU kernel cannot read files, so a GPU worker judges its outputs there against
frozen references in that folder; a host kernel runs inside its worker's process, so its references stay in this
process's memory only and its outputs are judged here.
"""

from __future__ import annotations

import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import load_npy, save_npy
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.freeze import freeze
from hyperloom.tools.gate.models import FreezeRequest, GateResult, OutputGate, Tolerance
from hyperloom.tools.gate.outputs import judge_checked_launches, output_gate
from hyperloom.tools.kernelspec.load import draw_inputs, output_buffers
from hyperloom.tools.kernelspec.reference import REFERENCE_TIMEOUT_S, run_references
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.models import InputSetVerdict
from hyperloom.tools.runtime.models import HOST_BACKENDS, TimedChecks, TrialResult

ROLES = ("timed", "fresh")
SECRET_DIR = "secret"


@dataclass
class SecretSets:
    """The two secret sets of one launchable's problem: their inputs on disk, their references where only the judge sees them."""

    folder: Path
    output_names: list[str]
    in_worker: bool  # GPU: the worker judges against the frozen references in `folder`
    gates: dict[str, OutputGate] = field(default_factory=dict)
    references: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # host: by role, by output

    @classmethod
    def draw(cls, launchable: Launchable, workspace: Workspace, *, timeout_s: float = REFERENCE_TIMEOUT_S) -> SecretSets:
        folder = workspace.state_dir(SECRET_DIR, secrets.token_hex(8))
        folder.chmod(0o700)
        names = [a.name for a in output_buffers(launchable.loaded.spec)]
        sets = cls(folder, names, launchable.backend not in HOST_BACKENDS)
        try:
            for role in ROLES:
                (folder / role).mkdir()
                for name, array in draw_inputs(launchable.loaded.spec, launchable.shape, "seeded", seed=secrets.randbits(62)).items():
                    save_npy(folder / role / f"in_{name}.npy", array)
            # both in one worker, never through the reference cache: no copy of them outlives the sets
            run_references(launchable.loaded, launchable.shape, [(folder / role, folder / f"{role}-refs") for role in ROLES],
                           timeout_s=timeout_s)
            for role in ROLES:
                sets._keep(role, folder / f"{role}-refs", workspace, launchable.loaded.spec.tolerance)
        except BaseException:
            sets.close()
            raise
        return sets

    def _keep(self, role: str, refs: Path, workspace: Workspace, tolerance: Tolerance) -> None:
        paths = [refs / f"ref_{n}.npy" for n in self.output_names]
        if self.in_worker:
            frozen = self.folder / f"{role}-frozen"
            freeze(FreezeRequest(out=workspace.relative(frozen), references=[workspace.relative(p) for p in paths],
                                 **tolerance.model_dump()), workspace)
            self.gates[role] = output_gate(frozen, self.output_names, [f"{role}:{n}" for n in self.output_names], workspace)
        else:
            self.references[role] = {n: load_npy(p) for n, p in zip(self.output_names, paths, strict=True)}
        shutil.rmtree(refs, ignore_errors=True)

    @property
    def timed_inputs(self) -> Path:
        return self.folder / "timed"

    def checks(self, outputs: Path, determinism: Tolerance | None) -> TimedChecks:
        """What the timing trial must also do (TimedChecks), its outputs kept in `outputs` when the caller judges them."""
        fresh = {p.name.removeprefix("in_").removesuffix(".npy"): str(p) for p in sorted((self.folder / "fresh").glob("in_*.npy"))}
        return TimedChecks(fresh_inputs=fresh, outputs=str(outputs), determinism=determinism,
                           last_gate=self.gates.get("timed"), fresh_gate=self.gates.get("fresh"))

    def verdicts(self, trial: TrialResult, checks: TimedChecks, tolerance: Tolerance) -> list[InputSetVerdict]:
        """The timed launch, the fresh-inputs launch and (when asked) their determinism, each a verdict naming its check."""
        if self.in_worker:
            gates = trial.timed_gates
        else:
            folder = Path(checks.outputs)
            read = lambda prefix: {n: load_npy(folder / f"{prefix}_{n}.npy") for n in self.output_names  # noqa: E731
                                   if (folder / f"{prefix}_{n}.npy").is_file()}
            last, fresh, again = read("last"), read("fresh"), read("again")
            names = {role: {n: f"{refs}:{n}" for n in self.output_names} for role, refs in (("last", "timed"), ("fresh", "fresh"))}
            gates = judge_checked_launches(last, again, fresh, self.references["timed"], self.references["fresh"], tolerance,
                                           checks.determinism, names)
        verdicts = [_verdict("timed_launch", "the last timed launch, on secret inputs (its outputs poisoned first)", gates.get("last")),
                    _verdict("fresh_inputs", "a launch on a second secret input set after the timed ones", gates.get("fresh"))]
        if checks.determinism is not None:
            verdicts.append(_verdict("determinism", "two launches on the same inputs (the last timed one and one more) agree within the "
                                                    "tolerance", gates.get("determinism")))
        return verdicts

    def get(self) -> SecretSets:
        return self

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class DrawnMeanwhile:
    """Secret sets drawn in a background thread while the candidate is gated (their reference runs in its own worker):
    get() waits for them; close() removes them, drawn or not."""

    def __init__(self, launchable: Launchable, workspace: Workspace, *, timeout_s: float = REFERENCE_TIMEOUT_S) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="secret-sets")
        self._future = self._pool.submit(SecretSets.draw, launchable, workspace, timeout_s=timeout_s)

    def get(self) -> SecretSets:
        return self._future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._future.exception() is None:
            self._future.result().close()


def _verdict(check: str, what: str, gate: GateResult | None) -> InputSetVerdict:
    if gate is None:
        return InputSetVerdict(input_set=check, check=check, passed=False, status="ERROR",  # type: ignore[arg-type]
                               summary=f"{what}: the worker returned no verdict on it")
    return InputSetVerdict(input_set=check, check=check, passed=gate.passed, summary=f"{what}: {gate.summary}",  # type: ignore[arg-type]
                           nan=any(not c.passed and c.nan_count.candidate > c.nan_count.reference for c in gate.cases))
