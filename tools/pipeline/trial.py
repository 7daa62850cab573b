"""One worker launch of a built launchable: its inputs staged, a correctness run whose outputs are gated, or a timing run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import load_npy, save_npy
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest
from hyperloom.tools.gate.outputs import output_gate
from hyperloom.tools.kernelspec.load import draw_inputs, output_buffers
from hyperloom.tools.kernelspec.reference import REFERENCE_TIMEOUT_S
from hyperloom.tools.pipeline.audit import StagedSet
from hyperloom.tools.pipeline.build import timing_kernels
from hyperloom.tools.pipeline.launch import Launchable, arg_specs
from hyperloom.tools.pipeline.models import InputSetVerdict
from hyperloom.tools.pipeline.references import stage_references
from hyperloom.tools.runtime.launcher import run_trial
from hyperloom.tools.runtime.models import HOST_BACKENDS, TimedChecks, Timing, TrialRequest, TrialResult

TrialRunner = Callable[..., TrialResult]
"""Runs a trial as launcher.run_trial(request, timeout_s=..., device=...) does."""


def stage_input_set(launchable: Launchable, input_set: str, folder: Path, *, timeout_s: float = REFERENCE_TIMEOUT_S) -> list[Path]:
    """Draw an input set into `folder` (in_<arg>.npy) with the reference's outputs (ref_<arg>.npy, computed in a
    worker process with `timeout_s`); returns the references."""
    loaded, shape = launchable.loaded, launchable.shape
    folder.mkdir(parents=True, exist_ok=True)
    inputs = draw_inputs(loaded.spec, shape, input_set)
    for name, array in inputs.items():
        save_npy(folder / f"in_{name}.npy", array)
    return stage_references(loaded, shape, inputs, folder, timeout_s=timeout_s)


def staged_inputs(folder: Path) -> dict[str, np.ndarray]:
    """The inputs staged in `folder` (in_<arg>.npy), by argument name."""
    return {p.name.removeprefix("in_").removesuffix(".npy"): load_npy(p) for p in sorted(folder.glob("in_*.npy"))}


def staged_set(launchable: Launchable, name: str, folder: Path) -> StagedSet:
    """An input set staged by stage_input_set (in_ and ref_ .npy files in `folder`), read back for the reference audit."""
    references = {a.name: load_npy(folder / f"ref_{a.name}.npy") for a in output_buffers(launchable.loaded.spec)}
    return StagedSet(name, staged_inputs(folder), references)


def check_input_set(
    launchable: Launchable, code_object: str, input_set: str, inputs: Path, outputs: Path, workspace: Workspace, *,
    timeout_s: float, device: int | None, reference_set: Path | None = None, runner: TrialRunner = run_trial,
) -> InputSetVerdict:
    """Run the kernel once on poisoned outputs with the inputs staged in `inputs`, then gate its outputs.

    References come from `inputs` (ref_<arg>.npy, the spec's tolerance) or from a frozen `reference_set`.
    `runner` runs the launch (default a fresh worker process; tune passes its warm workers). A GPU kernel's
    outputs meet a frozen set inside its worker (tools/gate/outputs.py); other outputs are written to
    `outputs` and gated here.
    """
    names = [a.name for a in output_buffers(launchable.loaded.spec)]
    case_names = [f"{input_set}:{n}" for n in names]
    in_worker = output_gate(reference_set, names, case_names,
                            workspace) if reference_set is not None and launchable.backend not in HOST_BACKENDS else None
    outputs.mkdir(parents=True, exist_ok=True)
    trial = runner(
        TrialRequest(backend=launchable.backend, code_object=str(workspace.root / code_object),
                     entry=launchable.symbol or launchable.variant.entry,
                     args=arg_specs(launchable, inputs, outputs), grid=launchable.grid, block=launchable.block,
                     shared_bytes=launchable.shared_bytes, launch_args=launchable.variant.launch_args, mode="correctness",
                     timing_code_object=_helpers_if_built(launchable, workspace), gate=in_worker),
        timeout_s=timeout_s, device=device,
    )
    if trial.status != "OK":
        return InputSetVerdict(input_set=input_set, passed=False, summary=f"{trial.status}: {trial.message}", status=trial.status,
                               elapsed_s=trial.elapsed_s)
    if trial.guard_violations:
        return guard_verdict(input_set, trial)
    if in_worker is not None:
        if trial.gate is None:
            return InputSetVerdict(input_set=input_set, passed=False, status="ERROR", elapsed_s=trial.elapsed_s,
                                   summary="ERROR: the worker ran the launch but returned no verdict on its outputs (a worker of "
                                           "another version?)")
        gate = trial.gate
    else:
        against = (
            {"reference_set": workspace.relative(reference_set)} if reference_set is not None
            else {"references": [workspace.relative(inputs / f"ref_{n}.npy") for n in names],
                  **launchable.loaded.spec.tolerance.model_dump()}
        )
        gate = run_gate(GateRequest(candidates=[workspace.relative(outputs / f"out_{n}.npy") for n in names], case_names=case_names,
                                    **against), workspace)
    return InputSetVerdict(
        input_set=input_set, passed=gate.passed, summary=gate.summary, elapsed_s=trial.elapsed_s,
        nan=any(not c.passed and c.nan_count.candidate > c.nan_count.reference for c in gate.cases),
    )


def time_kernel(
    launchable: Launchable, code_object: str, inputs: Path, timing: Timing, workspace: Workspace, *, timeout_s: float, device: int | None,
    runner: TrialRunner = run_trial, checks: TimedChecks | None = None,
) -> TrialResult:
    """Time the kernel on the inputs staged in `inputs`, in a worker process (`runner`'s); with `checks`, the timed
    launches are gated too (tools/pipeline/secret.py)."""
    helpers = _helpers(launchable, workspace)
    return runner(
        TrialRequest(backend=launchable.backend, code_object=str(workspace.root / code_object),
                     entry=launchable.symbol or launchable.variant.entry,
                     args=arg_specs(launchable, inputs, None), grid=launchable.grid, block=launchable.block,
                     shared_bytes=launchable.shared_bytes, launch_args=launchable.variant.launch_args, mode="timing", timing=timing,
                     timing_code_object=helpers, checks=checks),
        timeout_s=timeout_s, device=device,
    )


def guard_verdict(input_set: str, trial: TrialResult) -> InputSetVerdict:
    """The verdict on a launch that wrote outside its buffers."""
    return InputSetVerdict(input_set=input_set, check="guard", passed=False, elapsed_s=trial.elapsed_s,
                           summary="wrote outside its buffers (guard regions changed): " + "; ".join(trial.guard_violations))


def _helpers(launchable: Launchable, workspace: Workspace) -> str | None:
    """The device helpers' code object (timing.hip) for the launch's target; None on a CPU backend."""
    return None if launchable.backend in HOST_BACKENDS else str(workspace.root / timing_kernels(launchable.target, workspace))


def _helpers_if_built(launchable: Launchable, workspace: Workspace) -> str | None:
    """The helpers for a warm worker's kept inputs; None also when they do not build (a correctness trial does not need them)."""
    try:
        return _helpers(launchable, workspace)
    except HyperloomError:
        return None
