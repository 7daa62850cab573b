"""Freeze's side of the twin rule (twin.py): which outputs take a derived tolerance, and each one's tolerance from the
baseline's and the twin's outputs.

An output takes the derived tolerance when the caller declares none for it: no atol, rtol or token_match in the
request (else those hold for every output not named otherwise), nothing under per_output, nothing in the workload's
own `tolerances`; or, for every output not named, when the caller gives k. Generated tokens with their top-k
log-probabilities follow their log-probabilities' output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload.gate import generated, twin
from hyperloom.tools.workload.models import DerivedTolerance, OutputTolerance, WorkloadFreezeRequest


def rule_k(request: WorkloadFreezeRequest) -> float | None:
    """The k of the twin rule for outputs declared nowhere: the request's, the default where it declares no tolerance
    for all outputs, else None (its atol/rtol/token_match hold)."""
    if request.k is not None:
        return request.k
    declared = request.atol > 0 or request.rtol > 0 or request.token_match < 1
    return None if declared else twin.DEFAULT_K


def derived_outputs(names: list[str], k: float | None, request: WorkloadFreezeRequest, declared: dict[str, dict[str, float]]) -> list[str]:
    """The outputs the twin rule judges; a generated group goes with its log-probabilities."""
    if k is None:
        return []
    explicit = set(request.per_output) | set(declared)
    groups = generated.companions(names)
    chosen = [n for n in names if n not in explicit]
    for tokens, (ids, logprobs) in groups.items():
        inside = logprobs not in explicit
        chosen = [n for n in chosen if n not in (tokens, ids, logprobs)] + ([tokens, ids, logprobs] if inside else [])
    return chosen


def tolerances(folder_base: Path, folder_twin: Path, names: list[str], metas: dict[str, dict], k: float, twin_dtype: str,
               drift_runs: Sequence[tuple[Path, Path]] = ()) -> dict[str, OutputTolerance]:
    """The derived tolerance of each output in `names` (and of NAME.teacher where both sides saved one), from the arrays
    saved in the baseline's and the twin's folders; a twin whose outputs do not line up with the baseline's is refused.
    A decoder's top-k log-probability drift is the largest over the frozen inputs and `drift_runs` (the baseline's and
    the twin's folders of the same fresh inputs): one worst element, it varies from prompt to prompt."""
    load = _loader(folder_base, folder_twin)
    groups = generated.companions(names)
    grouped = generated.grouped(groups)
    result: dict[str, OutputTolerance] = {}
    for name in names:
        if name in grouped:
            continue
        base, other = load(name)
        result[name] = OutputTolerance(derived=twin.derive(base, other, metas[name]["original_dtype"], k, twin_dtype))
    for tokens, (ids, logprobs) in groups.items():
        if logprobs not in names:
            continue
        drifts = [_drift(loader, tokens, ids, logprobs) for loader in (load, *(_loader(b, t) for b, t in drift_runs))]
        rule = DerivedTolerance(k=k, twin_dtype=twin_dtype, baseline_error={"top_logprob_drift": max(drifts)}, floor=twin.NATS_FLOOR,
                                inputs=len(drifts))
        result.update({tokens: OutputTolerance(), ids: OutputTolerance(),
                       logprobs: OutputTolerance(atol=rule.live_bound("top_logprob_drift"), derived=rule)})
        teacher = tokens + twin.TEACHER
        if (folder_base / f"{teacher}.npy").is_file() and (folder_twin / f"{teacher}.npy").is_file():
            result[teacher] = OutputTolerance(derived=_teacher_rule(teacher, load, drift_runs,
                                                                    metas.get(teacher, {}).get("original_dtype", "float32"), k, twin_dtype))
    return result


WORST_ELEMENT = ("max_rel",)  # measures read off one element: the largest over prompts, as the log-probability drift


def _teacher_rule(teacher: str, load, drift_runs: list[tuple[Path, Path]], original_dtype: str, k: float,
                  twin_dtype: str) -> DerivedTolerance:
    """The teacher-forced logits' rule: the baseline's error against its twin on the frozen prompt, where the candidate
    is measured too; a measure read off one element (max_rel) the largest over the frozen prompt and the fresh ones
    where both scored them, as the log-probability drift is. On a BART (bf16) an honest attention path measured
    0.73-1.57x one prompt's max_rel over seven prompts and 0.76-1.26x its rel_l2: the norm keeps the frozen prompt's."""
    base, other = load(teacher)
    rule = twin.derive(base, other, original_dtype, k, twin_dtype)
    seeded = [errors for b, t in drift_runs if (b / f"{teacher}.npy").is_file() and (t / f"{teacher}.npy").is_file()
              and (errors := _seeded_errors(b, t, teacher)) is not None]
    if not seeded:
        return rule
    worst = {measure: max([value, *(e[measure] for e in seeded)]) if measure in WORST_ELEMENT else value
             for measure, value in rule.baseline_error.items()}
    return rule.model_copy(update={"baseline_error": worst, "inputs": 1 + len(seeded)})


def _seeded_errors(folder_base: Path, folder_twin: Path, teacher: str) -> dict[str, float] | None:
    """The baseline's teacher error on one fresh prompt, or None where its shape differs from the twin's."""
    base, other = (np.load(f / f"{teacher}.npy", allow_pickle=False) for f in (folder_base, folder_twin))
    return twin.errors(base, other) if base.shape == other.shape else None


def _drift(load, tokens: str, ids: str, logprobs: str) -> float:
    (bt, tt), (bi, ti), (bl, tl) = load(tokens), load(ids), load(logprobs)
    return twin.logprob_drift(bi, bl, ti, tl, bt, tt)


def _loader(folder_base: Path, folder_twin: Path):
    def load(name: str) -> tuple[np.ndarray, np.ndarray]:
        base, other = (np.load(f / f"{name}.npy", allow_pickle=False) for f in (folder_base, folder_twin))
        if base.shape != other.shape or (base.dtype.kind in "iu") != (other.dtype.kind in "iu"):
            raise HyperloomError(f"the float32 twin's output {name} is {other.dtype}{list(other.shape)}, the baseline's "
                                 f"{base.dtype}{list(base.shape)}",
                                 "make the workload's outputs independent of the model's dtype, or declare a tolerance (atol/rtol, "
                                 "per_output)")
        return base, other
    return load


def self_spread(a: np.ndarray, b: np.ndarray, rule: DerivedTolerance) -> float:
    """Two baseline runs apart in units of the derived bound (<= 1 fits)."""
    if a.shape != b.shape:
        return float("inf")
    return max((value / rule.bound(measure) if rule.bound(measure) > 0 else (0.0 if value == 0 else float("inf")))
               for measure, value in twin.errors(a, b).items())
