"""workload_bench: a frozen workload's end-to-end step time, and each candidate's beside it, in this call.

The baseline runs in one worker for the whole call; each candidate (a lever or a combination) in another, built
with its levers. A candidate is judged in this order, and stops at the first failure:
1. it builds and warms up (a compile happens here): else CRASH, TIMEOUT or RAISED with the worker's reason;
2. its outputs match the frozen baseline's within the declared tolerance: else REJECTED with the first mismatches;
3. every lever left its evidence in a profiled step (tools/workload/levers.py's `engaged_by`): else NO_OP; that step
   (run as a timed step, its inputs drawn before the profile) did at least a quarter of the baseline's gemm and
   attention work, unless a lever declares why it does less, and its inputs(seed) ran no code the baseline's does not
   (proof.py): else REJECTED;
4. A/B: `pairs` pairs of legs, baseline and candidate interleaved, the order alternating; a leg is the mean of its
   steps' timed windows (timed.py, window.py: step() and outputs(), device time on a GPU; inputs(seed) before each
   window and the outputs' host copy after it, both outside; fresh seeds, the other worker stopped), as many steps
   as fill 25 ms of the model's time, 100 ms of device time on a GPU (pacing.paced_steps). The speedup is the median of
   the pairs' own ratios. FASTER only when the candidate's slowest leg beats the baseline's fastest with a median
   beyond the noise band, or the one-sided sign test says so (p < 0.05) and the lower end of the ratios' 95 %
   interval lies beyond it. The band is `noise_band` or, wider, what a second worker doing the baseline's own work
   measured against it before any candidate (the A/A, `same_work`: each process keeps its own pace, ab.calibrated);
5. in each pair one step drawn after the legs has the candidate's outputs gated against the baseline's of the same
   seeds (a graph that replays stale buffers, a memo, a cache fail here) and every step's output digests against the
   baseline's (digest.py); its windows against the controller's clock around each call, its inputs(seed) against the
   baseline's on the same seeds (clock_checks.py), and the functions its timing path calls against what they were
   before its code ran (tamper.py): else REJECTED. A workload without inputs(seed) is timed on fixed inputs, and every
   reason says memoization is not excluded;
6. a candidate whose timed step (its legs' median) is under the baseline step's roof (roof.py: its flops and
   parameter bytes at the known ceilings, halved) is IMPOSSIBLE. No ceiling known (a CPU without a roofline result):
   no roof, and a warning says so.
No figure from an earlier call is compared against; another process on the GPU is a warning (or, with
`exclusive`, a refusal), since its work would be timed too.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
from contextlib import closing
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.toolchain import find_tool
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.stats import summarize
from hyperloom.tools.smi.nvidia import APPS_ARGS, parse_apps
from hyperloom.tools.workload.ab import (INPUTS_FIXED, ABSettings, Against, Candidate, Plan, baseline_legs, calibrated, fresh_inputs,
                                         saved_outputs, target_with, trial)
from hyperloom.tools.workload.freeze import refusal
from hyperloom.tools.workload.gate.frozen import compare, read_frozen
from hyperloom.tools.workload.gate.frozen import references as frozen_references
from hyperloom.tools.workload.levers import prepared
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadBenchResult
from hyperloom.tools.workload.spare import Spare, Where
from hyperloom.tools.workload.process import WorkloadFailure, WorkloadProcess
from hyperloom.tools.workload.checks.proof import reference_evidence
from hyperloom.tools.workload.report import write_report


def bench_workload(request: WorkloadBenchRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadBenchResult:
    frozen = read_frozen(request.name, workspace)
    # refused before any process starts
    levers = [prepared(names, frozen.vendor, frozen.declared_knobs, workspace) for names in request.candidates]
    runs = frozen.folder / "runs" / "bench"
    if runs.exists():
        shutil.rmtree(runs)
    references = frozen_references(frozen)
    warnings: list[str] = []
    if not frozen.gated:
        warnings.append("the workload has no outputs(): candidates are timed, not gated")
    try:
        base = WorkloadProcess(frozen.target, [], runs / "baseline", workspace, request.timeout_s)
        with closing(base), Spare(enabled=not request.fresh_workers) as spare:
            # the A/A's worker built beside the baseline
            spare.beside(base, Where(frozen.target, workspace, request.timeout_s), runs / "spare")
            info = base.info
            base.warmup(request.warmup_steps)
            warnings += _others_on_gpu(info, [base.pid, spare.pid], request.exclusive)
            base_checks = compare(saved_outputs(base, runs / "baseline" / "outputs", references), references, frozen.tolerances)
            if not all(c.passed for c in base_checks):
                raise HyperloomError("the baseline no longer matches its frozen outputs: "
                                     + "; ".join(f"{c.output}: {c.detail}" for c in base_checks if not c.passed)[:500],
                                     "freeze the workload again (overwrite) if the change is intended; else find what changed (the "
                                     "workload's code, a library)")
            solo = baseline_legs(base, request.steps_per_leg, request.target_ci, request.max_baseline_legs, references,
                                 runs / "baseline" / "solo")
            baseline = solo.legs_s
            fresh = fresh_inputs(base)
            if not fresh:
                warnings.append(INPUTS_FIXED + ": a candidate could return what it computed before, so a gain here is not proof")
            solo_s = statistics.median(baseline)
            base_evidence = reference_evidence(base, runs / "baseline" / "profiled", workspace)
            roof = base_evidence["roof"]
            if roof.roof_s is None:
                warnings.append(roof.note)
            settings = ABSettings(request.pairs, solo.steps_per_leg, request.warmup_steps, request.noise_band, request.timeout_s)
            against = Against(base, base_evidence, references, frozen.tolerances, solo_s)
            same = trial(Candidate([], []), against,
                         Plan(settings, runs / "same_work", Where(frozen.target, workspace, settings.timeout_s), spare))
            settings = calibrated(settings, same)
            results = []
            for index, (names, chosen) in enumerate(zip(request.candidates, levers, strict=True)):
                where = Where(target_with(frozen.target, chosen), workspace, settings.timeout_s)
                results.append(trial(Candidate(names, chosen), against, Plan(settings, runs / f"candidate{index}", where, spare)))
                if progress is not None:
                    progress(index + 1, len(request.candidates))
    except WorkloadFailure as failure:
        raise refusal(failure, frozen.target.workload, request.timeout_s) from None
    stats = summarize(baseline)
    faster = [r for r in results if r.verdict == "FASTER"]
    inputs = f", inputs(seed) {solo.inputs_step_s * 1e3:.3g} ms a step outside it" if solo.inputs_step_s is not None else ""
    summary = (f"baseline {stats.median_s * 1e3:.3g} ms/step ({_figure_said(solo.figure)}{inputs}; ±{stats.median_ci95_rel:.1%}); " + (
        f"{len(faster)} of {len(results)} candidate(s) faster: " + ", ".join(f"{'+'.join(r.levers)} {r.speedup:.3g}x" for r in faster)
        if faster else f"no candidate of {len(results)} faster" if results else "no candidates")
               + ("" if fresh else "; inputs fixed: memoization not excluded"))
    evidence = measured("workload_bench", device=info["device"] or host_device(), target=info["vendor"], toolchain=info["toolchain"],
                        inputs_sha256=combine_digests([frozen.manifest_sha256, sha256_json(request.model_dump(mode="json"))]))
    result = WorkloadBenchResult(ok=True, summary=summary, name=request.name, baseline=stats, baseline_device_step_s=solo.device_step_s,
                                 same_work=same, baseline_inputs_step_s=solo.inputs_step_s, baseline_wall_step_s=solo.wall_step_s,
                                 figure=solo.figure, noise_band=settings.noise_band, candidates=results,
                                 baseline_work=base_evidence["work"], roof=roof, warnings=warnings, report_md="", result_json="", plot=None,
                                 vendor=info["vendor"], evidence=evidence)
    return write_report(result, frozen.folder / "bench", workspace)


def _figure_said(figure: str) -> str:
    """What a step figure is, for the summary line."""
    return {"device": "device time of step() and outputs()", "wall": "step() and outputs() on the worker's clock"}.get(figure, figure)


def _others_on_gpu(info: dict[str, Any], ours: list[int | None], exclusive: bool) -> list[str]:
    """Processes on an NVIDIA GPU other than our workers (nvidia-smi; a ROCm or CPU run is not checked)."""
    if info["vendor"] != "cuda":
        return [] if info["vendor"] == "cpu" else ["other processes on the GPU were not checked (amd-smi's process list is not read yet)"]
    smi = find_tool("nvidia-smi")
    if smi.path is None:
        return ["nvidia-smi not found: other processes on the GPU were not checked"]
    try:
        text = subprocess.run([smi.path, *APPS_ARGS], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ["nvidia-smi did not list the GPU's processes: others were not checked"]
    others = [p for p in parse_apps(text, []) if p.pid not in ours]
    if not others:
        return []
    said = "other processes use the GPU, so their work would be timed too: " + ", ".join(p.describe() for p in others[:4])
    if exclusive:
        raise HyperloomError(said, "wait for them to finish, or pass exclusive false to measure anyway (the result warns)")
    return [said]
