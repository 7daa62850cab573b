"""workload_bench: a frozen workload's end-to-end step time, and each candidate's beside it, in this call.

The baseline runs in one worker for the whole call; each candidate (a lever or a combination) in another, built
with its levers. A candidate is judged in this order, and stops at the first failure:
1. it builds and warms up (a compile happens here): else CRASH, TIMEOUT or RAISED with the worker's reason;
2. its outputs match the frozen baseline's within the declared tolerance: else REJECTED with the first mismatches;
3. every lever left its evidence in a profiled step (tools/workload/levers.py's `engaged_by`): else NO_OP;
4. A/B: `pairs` pairs of legs, baseline and candidate interleaved, the order alternating; a leg is the median of
   `steps_per_leg` synchronized steps (wall clock; device events reported beside). The speedup is the median of
   the pairs' own ratios. FASTER only when the candidate's slowest leg beats the baseline's fastest, or the
   one-sided sign test says so (p < 0.05) and the lower end of the ratios' 95 % interval lies beyond `noise_band`;
5. its outputs are gated once more after the timed steps (a graph that replays stale buffers fails here).
No figure from an earlier call is compared against; another process on the GPU is a warning (or, with
`exclusive`, a refusal), since its work would be timed too.
"""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.toolchain import find_tool
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.stats import sign_test_p, summarize
from hyperloom.tools.runtime.sampling import Z95, median_ci_halfwidth
from hyperloom.tools.smi.nvidia import APPS_ARGS, parse_apps
from hyperloom.tools.workload.engagement import engagement
from hyperloom.tools.workload.freeze import refusal
from hyperloom.tools.workload.frozen import Frozen, compare, read_frozen, reference
from hyperloom.tools.workload.levers import Lever, check_candidate, resolve_files
from hyperloom.tools.workload.models import CandidateResult, OutputCheck, WorkloadBenchRequest, WorkloadBenchResult
from hyperloom.tools.workload.process import WorkloadFailure, WorkloadProcess
from hyperloom.tools.workload.report import write_report

ALPHA = 0.05


def bench_workload(request: WorkloadBenchRequest, workspace: Workspace, progress: ProgressFn | None = None) -> WorkloadBenchResult:
    frozen = read_frozen(request.name, workspace)
    levers = [resolve_files(check_candidate(names, frozen.vendor, frozen.declared_knobs), workspace) for names in request.candidates]  # refused before any process starts
    runs = frozen.folder / "runs" / "bench"
    if runs.exists():
        shutil.rmtree(runs)
    references = {name: reference(frozen, name) for name in frozen.tolerances}
    warnings: list[str] = []
    if not frozen.gated:
        warnings.append("the workload has no outputs(): candidates are timed, not gated")
    try:
        with WorkloadProcess(frozen.target, [], runs / "baseline", workspace, request.timeout_s) as base:
            info = base.info
            base.warmup(request.warmup_steps)
            warnings += _others_on_gpu(info, [base.pid], request.exclusive)
            base_checks = compare(_outputs(base, runs / "baseline" / "outputs"), references, frozen.tolerances)
            if not all(c.passed for c in base_checks):
                raise HyperloomError("the baseline no longer matches its frozen outputs: " + "; ".join(f"{c.output}: {c.detail}" for c in base_checks if not c.passed)[:500],
                                     "freeze the workload again (overwrite) if the change is intended; else find what changed (the workload's code, a library)")
            baseline_legs, base_device = _baseline_legs(base, request)
            base_evidence = base.engagement()
            results = []
            for index, (names, chosen) in enumerate(zip(request.candidates, levers, strict=True)):
                results.append(_candidate(names, chosen, base, base_evidence, frozen, references, request, runs / f"candidate{index}", workspace))
                if progress is not None:
                    progress(index + 1, len(request.candidates))
    except WorkloadFailure as failure:
        raise refusal(failure, frozen.target.workload, request.timeout_s) from None
    stats = summarize(baseline_legs)
    faster = [r for r in results if r.verdict == "FASTER"]
    summary = (f"baseline {stats.median_s * 1e3:.3g} ms/step (±{stats.median_ci95_rel:.1%}); " + (
        f"{len(faster)} of {len(results)} candidate(s) faster: " + ", ".join(f"{'+'.join(r.levers)} {r.speedup:.3g}x" for r in faster) if faster
        else f"no candidate of {len(results)} faster" if results else "no candidates"))
    evidence = measured("workload_bench", device=info.get("device") or host_device(), target=info["vendor"], toolchain=info.get("toolchain"),
                        inputs_sha256=combine_digests([frozen.manifest_sha256, sha256_json(request.model_dump(mode="json"))]))
    result = WorkloadBenchResult(ok=True, summary=summary, name=request.name, baseline=stats, baseline_device_step_s=base_device, candidates=results,
                                 warnings=warnings, report_md="", result_json="", plot=None, vendor=info["vendor"], evidence=evidence)
    return write_report(result, frozen.folder / "bench", workspace)


def _outputs(process: WorkloadProcess, folder: Path) -> Path:
    process.outputs(folder)
    return folder


def _baseline_legs(base: WorkloadProcess, request: WorkloadBenchRequest) -> tuple[list[float], float | None]:
    """Legs of the baseline alone until its median's CI is within target_ci (or max_baseline_legs)."""
    legs, device = [], []
    while len(legs) < request.max_baseline_legs:
        timed = base.time(request.steps_per_leg)
        legs.append(statistics.median(timed["wall_s"]))
        device += timed["device_s"]
        if len(legs) >= 6 and median_ci_halfwidth(legs) <= request.target_ci:
            break
    return legs, statistics.median(device) if device else None


def _candidate(names: list[str], levers: list[Lever], base: WorkloadProcess, base_evidence: dict[str, Any], frozen: Frozen,
               references: dict[str, np.ndarray], request: WorkloadBenchRequest, folder: Path, workspace: Workspace) -> CandidateResult:
    knobs = dict(frozen.target.knobs)
    for lever in levers:
        if lever.kind == "knob":
            key, value = lever.value.split("=", 1)
            knobs[key] = value
    target = frozen.target.__class__(frozen.target.workload, frozen.target.kind, frozen.target.args, knobs)
    try:
        with WorkloadProcess(target, levers, folder, workspace, request.timeout_s) as process:
            warm = process.warmup(request.warmup_steps)
            checks = compare(_outputs(process, folder / "outputs"), references, frozen.tolerances)
            if not all(c.passed for c in checks):
                return CandidateResult(levers=names, verdict="REJECTED", reason=_mismatch_reason(checks), outputs=checks, warmup_s=sum(warm["wall_s"]))
            engaged = engagement(levers, process.engagement(), base_evidence, warm)
            if not all(e.engaged for e in engaged):
                off = [e for e in engaged if not e.engaged]
                return CandidateResult(levers=names, verdict="NO_OP", reason="; ".join(f"{e.lever} did not take effect: {e.evidence}" for e in off),
                                       engagement=engaged, outputs=checks, warmup_s=sum(warm["wall_s"]))
            base_legs, cand_legs, cand_device = _interleave(base, process, request)
            after = compare(_outputs(process, folder / "outputs_after"), references, frozen.tolerances)
    except WorkloadFailure as failure:
        return CandidateResult(levers=names, verdict=failure.status if failure.status in ("CRASH", "TIMEOUT") else "RAISED", reason=failure.message[:600])
    if not all(c.passed for c in after):
        return CandidateResult(levers=names, verdict="REJECTED", reason="after the timed steps: " + _mismatch_reason(after), outputs=after,
                               engagement=engaged, baseline_legs_s=base_legs, candidate_legs_s=cand_legs)
    return _judge(names, base_legs, cand_legs, cand_device, request.noise_band, engaged, checks, sum(warm["wall_s"]))


def _interleave(base: WorkloadProcess, candidate: WorkloadProcess, request: WorkloadBenchRequest) -> tuple[list[float], list[float], float | None]:
    base_legs, cand_legs, device = [], [], []
    for index in range(request.pairs):
        order = (base, candidate) if index % 2 == 0 else (candidate, base)
        for process in order:
            timed = process.time(request.steps_per_leg)
            leg = statistics.median(timed["wall_s"])
            if process is base:
                base_legs.append(leg)
            else:
                cand_legs.append(leg)
                device += timed["device_s"]
    return base_legs, cand_legs, statistics.median(device) if device else None


def _judge(names: list[str], base_legs: list[float], cand_legs: list[float], device: float | None, noise_band: float, engaged: list, checks: list[OutputCheck],
           warmup_s: float) -> CandidateResult:
    ratios = [b / c for b, c in zip(base_legs, cand_legs, strict=True) if c > 0]
    wins = sum(r > 1 for r in ratios)
    p = sign_test_p(wins, len(ratios))
    speedup = statistics.median(ratios)  # each pair's own ratio: a drift of the machine between pairs cancels out
    non_overlap = max(cand_legs) < min(base_legs)
    interval = _ratio_ci(ratios)
    faster = non_overlap or (p < ALPHA and interval[0] > 1 + noise_band)  # the gain's lower bound beyond the noise band, not its median
    short = "" if faster else f"; its 95 % interval ({interval[0]:.3g}-{interval[1]:.3g}x) not beyond the noise band of {noise_band:.0%} at p < {ALPHA}"
    reason = (f"{speedup:.3g}x: slowest candidate leg {max(cand_legs) * 1e3:.3g} ms beat the fastest baseline leg {min(base_legs) * 1e3:.3g} ms" if non_overlap
              else f"{speedup:.3g}x, faster in {wins}/{len(ratios)} pairs (sign test p = {p:.3f}){short}")
    return CandidateResult(levers=names, verdict="FASTER" if faster else "NOT_FASTER", reason=reason, speedup=speedup, speedup_ci95=interval,
                           pairs=len(ratios), candidate_faster=wins, sign_test_p=p, non_overlap=non_overlap, baseline_legs_s=base_legs,
                           candidate_legs_s=cand_legs, device_step_s=device, warmup_s=warmup_s, engagement=engaged, outputs=checks)


def _ratio_ci(ratios: list[float]) -> list[float]:
    """A distribution-free 95 % interval of the per-pair ratios' median (order statistics); their range below 6 pairs."""
    ordered = sorted(ratios)
    n = len(ordered)
    if n < 6:
        return [ordered[0], ordered[-1]]
    low = max(0, int(math.floor(n / 2 - Z95 * math.sqrt(n) / 2)))
    high = min(n - 1, int(math.ceil(n / 2 + Z95 * math.sqrt(n) / 2)))
    return [ordered[low], ordered[high]]


def _mismatch_reason(checks: list[OutputCheck]) -> str:
    return "outputs out of tolerance: " + "; ".join(f"{c.output}: {c.detail}" for c in checks if not c.passed)[:600]


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
