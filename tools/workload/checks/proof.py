"""Proof of work: a candidate's profiled step (one step run as a timed step runs, runner.engagement) must do a fair
share of the baseline's gemm and attention work, unless one of its levers declares why it does less (Lever.less_work:
a cache, a quantization). A step that returns a remembered result, or works only while it is timed, does almost none.

Two measures, each against the baseline's: the flops modelled from the ops' recorded shapes (what a faster kernel or
TF32 keeps while its time drops) and the time of the gemm and attention kernels (device time on a GPU; what a CUDA
graph's replay or Inductor's code keeps while its ops go unrecorded; operator self time on a CPU). A candidate is
refused only when both are under POW_FRACTION. A quarter: honest levers change how the work runs, not how much of it
(fusion, compilation and another backend keep the flops; a faster GEMM divides its time, TF32 by up to ~7x, and keeps
the flops), while the cheats it exists for did none (a memo, a result kept from warm-up: 0 of 600 matmuls) or an
eighth (a decode cut after the prefill: 75 of 600); a quarter keeps a factor two from each side.

Only a candidate that runs code Hyperloom did not write proves its work (levers.unreviewed: an overrides module, a
knob): the catalog's other levers are Hyperloom's own code, and the cheats this check exists for come as overrides.

The known limit: a candidate can ask torch whether a profiler is on. The roof (roof.py: the controller's clock only)
and the fresh-input gate (every timed step's outputs) do not depend on this profile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.levers import Lever
from hyperloom.tools.workload.models import StepWork
from hyperloom.tools.workload.checks.roof import known_ceilings, step_roof
from hyperloom.tools.workload.timed import draw_seeds
from hyperloom.tools.workload.work import describe, step_work

POW_FRACTION = 0.25
TRACE = "profiled_step.json"


def profiled_work(process: Any, folder: Path, proof: bool = True, seed: int | None = None) -> tuple[dict[str, Any], StepWork | None]:
    """One step of `process` profiled as a timed step (on `seed`, else a fresh one, when its workload takes one): its engagement
    evidence and its work. The trace is read and deleted here. Without `proof` the step's ops and kernels are counted
    only (engagement), no trace written nor read: the work is None. A CPU step is weighed in the worker from the
    profiler's raw events, no trace written. The trace is most of the cost (docs/decisions.md: What a proof-of-work
    profile costs)."""
    folder.mkdir(parents=True, exist_ok=True)
    trace = folder / TRACE
    seed = (seed if seed is not None else draw_seeds(1)[0]) if process.info["has_inputs"] else None
    evidence = {**process.engagement(trace=trace if proof else None, seed=seed), "profiled_seed": seed}
    if not proof:
        return evidence, None
    weighed = evidence.pop("work", None)  # weighed in the worker from the raw events (a CPU step: profile/kineto.py)
    try:
        work = (StepWork.model_validate(weighed) if weighed is not None else step_work(trace, evidence.get("parameter_bytes"))
                if trace.is_file() else None)
    finally:
        trace.unlink(missing_ok=True)
    if work is None:  # no torch in the worker: nothing was profiled
        work = StepWork(classes={}, parameter_bytes=None, device_timed=False)
    return evidence, work


def reference_evidence(process: Any, folder: Path, workspace: Workspace) -> dict[str, Any]:
    """The reference's engagement evidence, with its step's work ("work", StepWork) and roof ("roof", StepRoof) beside it:
    what every candidate judged against this reference is held to. Its step's seed ("profiled_seed") is the one each
    candidate's profiled step is given: a step whose work depends on its inputs (a generate that stops at EOS) is
    compared on the same inputs (on fresh ones a fused model's GEMMs were counted 174 against a reference's 696: NO_OP).
    The candidate never saw it before: the reference's profile runs in the reference's worker."""
    evidence, work = profiled_work(process, folder)
    device = process.info["device"] or _host()
    ceilings, source = known_ceilings(workspace, device)
    return {**evidence, "work": work, "roof": step_roof(work, ceilings, source, device)}


def _host() -> str:
    from hyperloom.core.evidence import host_device

    return host_device()


def short_of_work(baseline: StepWork | None, candidate: StepWork, levers: list[Lever]) -> str | None:
    """Why the candidate's profiled step did too little of the baseline's gemm and attention work, or None."""
    if baseline is None:
        return None
    theirs, mine = baseline.compute(), candidate.compute()
    shares = []
    if theirs.flops:
        shares.append(("flops", mine.flops / theirs.flops, f"{mine.flops / 1e6:.4g} of the baseline's {theirs.flops / 1e6:.4g} MFLOP"))
    if theirs.time_s:
        where = "device" if baseline.device_timed else "host self"
        shares.append(("time", mine.time_s / theirs.time_s, f"{mine.time_s * 1e3:.3g} of its {theirs.time_s * 1e3:.3g} ms of {where} time"))
    if not shares or any(share >= POW_FRACTION for _, share, _ in shares):
        return None
    declared = [lever for lever in levers if lever.less_work]
    if declared:
        return None
    said = "; ".join(text for _, _, text in shares)
    return (f"proof of work: its profiled step (run as a timed step) did under {POW_FRACTION:.0%} of the baseline's gemm and attention "
            f"work: {mine.ops} ops against {theirs.ops}; {said}. A step that skips the work (a memo, a result kept, work moved off the "
            f"step) does this; a lever that does less work by design must say why (Lever.less_work). Candidate: {describe(candidate)}")


def inputs_rewritten(candidate: set[str], reference: set[str]) -> str | None:
    """Why the candidate's inputs(seed) cannot stand outside its timed windows, or None: in its timed legs it ran code the
    reference's did not in any of its own (calls.py's names, traced in every leg on both sides): a wrapper of inputs or
    of what it calls, where work would run untimed. A candidate changes the step, never the inputs."""
    new = sorted(candidate - reference)
    if not new:
        return None
    shown = ", ".join(name.rsplit("/", 1)[-1] for name in new[:4]) + (f" and {len(new) - 4} more" if len(new) > 4 else "")
    return (f"its inputs(seed) runs code the reference's does not ({shown}): work there would run outside every timed window; a candidate "
            "may change the step, not the inputs")
