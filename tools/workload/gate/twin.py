"""The tolerance derived from the model's own numerics, the default when the caller declares none.

At freeze the workload's model is run once more as its twin: the same weights and inputs upcast to float32 (float64
on a CPU, and on a GPU for a float32 model; TF32 off), the closest thing to the exact answer the model has. Each output's baseline error
against the twin is MEASURED then, and a candidate passes when its own error against the twin is at most k times the baseline's (the rule
FlashAttention's tests apply between a kernel and a plain implementation in the same low precision, there with k = 2),
under each measure, with one machine epsilon of the output's dtype as the least a baseline error counts for (a baseline
more exact than its own dtype's step makes any reordering look large; torch.testing's dtype defaults play the same
part). k = 1.5 by default: every honest lever measured sat at or below 1.0x the baseline's error, or within the floor,
and one wrong layer at 1.68x and beyond (docs/decisions.md: The twin rule's k). An honest reordering (compile, another
attention backend, another cuDNN algorithm, a fused kernel adding in another order) moves an output about as far from
the twin as the baseline sits; a wrong one (a layer skipped, a scale off by a tenth, a truncated input) moves it many
times further. What separates them on a decoder, an encoder and a conv net was measured (skill: workload.md).

Measures: `rel_l2` (||c - t|| / ||t||, the whole output's drift) and `max_rel` (max |c - t| / max |t|, the worst
element: a few elements corrupted hide in an L2 norm). Integer outputs (argmax ids) by `unequal`, the share of
elements unlike the twin's, floored at one element. Generated tokens with their top-k log-probabilities keep the
near-tie gate (generated.py), its atol derived from the baseline's log-probability drift against the twin's (floored
at NATS_FLOOR): that gate compares the candidate with the baseline (frozen or live), never with the twin, so its atol
is the triangle bound below, (k + 1) x the drift (an honest decode_loop on fresh prompts sat above k x, within (k + 1) x:
docs/decisions.md: The twin rule's k); and a transformers decoder's tokens are also teacher-forced (`NAME.teacher`: the logits the model
gives the reference's tokens, judged by the float rule), so a parting does not end the comparison of the model's numerics.

Against a live reference instead of the twin (fresh inputs, a sweep point), only the triangle inequality is known:
|c - b| <= |c - t| + |t - b|, so a candidate within the rule sits within (k + 1) of the bound's unit of the baseline.
"""

from __future__ import annotations

import math

import numpy as np

from hyperloom.core.dtypes import float_info, numpy_dtype
from hyperloom.tools.workload.gate.generated import IDS
from hyperloom.tools.workload.models import DerivedTolerance, OutputCheck
from hyperloom.tools.workload.wire import TeacherRequest, teacher_request

DEFAULT_K = 1.5
TWIN = ".twin"  # a twin's output in a references dict: NAME.twin beside NAME
TEACHER = ".teacher"  # a decoder's teacher-forced logits on the reference's tokens: NAME.teacher beside the tokens NAME
FLOAT_MEASURES = ("rel_l2", "max_rel")
INTEGER_MEASURE = "unequal"
NATS_FLOOR = 2.0 ** -6  # one bf16 step of a logit between 2 and 4: the least log-probability drift a bf16 model shows


CHUNK = 1 << 18
"""Elements a float error is measured over at a time: float64 copies of 2 MB, not of the whole output (a BERT
encoder's 6.3M hidden-state elements: 80 ms over whole-array copies, 20 ms in chunks, on a 2-core CPU)."""


def errors(candidate: np.ndarray, twin: np.ndarray) -> dict[str, float]:
    """The candidate's error against the twin under each measure (floats: FLOAT_MEASURES; integers: INTEGER_MEASURE).
    Floats in float64, one pass in chunks, sums of squares never through BLAS: the controller runs this after every
    gated pair, and np.linalg.norm's OpenBLAS threads spin after each call, beside the candidate's launch thread
    (docs/decisions.md: The twin's errors without BLAS threads)."""
    if twin.dtype.kind in "iu":
        return {INTEGER_MEASURE: float(np.mean(candidate != twin)) if twin.size else 0.0}
    c, t = candidate.reshape(-1), twin.reshape(-1)
    squares_diff = squares_twin = top_diff = top_twin = 0.0
    for at in range(0, t.size, CHUNK):
        reference = t[at:at + CHUNK].astype(np.float64)
        diff = np.subtract(c[at:at + CHUNK], reference, dtype=np.float64)
        if not np.isfinite(diff).all():  # a NaN or an infinity on either side
            return dict.fromkeys(FLOAT_MEASURES, float("inf"))
        np.abs(diff, out=diff)
        np.abs(reference, out=reference)
        top_diff, top_twin = max(top_diff, float(diff.max())), max(top_twin, float(reference.max()))
        squares_diff += float(np.square(diff, out=diff).sum())
        squares_twin += float(np.square(reference, out=reference).sum())
    l2_diff, l2_twin = math.sqrt(squares_diff), math.sqrt(squares_twin)
    return {"rel_l2": l2_diff / l2_twin if l2_twin > 0 else l2_diff, "max_rel": top_diff / top_twin if top_twin > 0 else top_diff}


TIGHT_MISS = 4.0
"""A candidate refused at under this many times the baseline's error is told how to declare a looser rule: a wrong one
(a skipped layer, a 10 % MLP) sits far beyond it, an honest reordering just outside k."""
WIDE_ULPS = 4
"""An output in float32 or wider: the least its baseline error counts for is this many of its epsilons. Such a model is
its float64 twin's all but the last bits, and an honest reordering moves its worst element by a few of them (compile on
a newcomer's float32 CPU conv net: max_rel 1.6 epsilons, refused at 1.5 x one); a wrong result moves it by orders of
magnitude more. A narrower float keeps one epsilon: its baseline's own error is above that already."""


def floor_of(original_dtype: str, array: np.ndarray) -> float:
    """The least a baseline error counts for: one machine epsilon of the output's own dtype (WIDE_ULPS of them for float32
    and wider); one element for integers."""
    if array.dtype.kind in "iu":
        return 1.0 / max(array.size, 1)
    try:
        eps = float(float_info(numpy_dtype(original_dtype)).eps)
    except (TypeError, ValueError, KeyError):
        eps = float(float_info(array.dtype).eps)
    return eps * (WIDE_ULPS if eps <= float(np.finfo(np.float32).eps) else 1)


def derive(baseline: np.ndarray, twin: np.ndarray, original_dtype: str, k: float, twin_dtype: str) -> DerivedTolerance:
    """The rule for one output, from the baseline's error against its twin (shapes checked by the caller)."""
    return DerivedTolerance(k=k, twin_dtype=twin_dtype, baseline_error=errors(baseline, twin), floor=floor_of(original_dtype, baseline))


def check(name: str, candidate: np.ndarray, twin: np.ndarray, derived: DerivedTolerance) -> OutputCheck:
    """The twin rule for one output: each measure within k x the baseline's (floored)."""
    if candidate.shape != twin.shape:
        return OutputCheck(output=name, passed=False, detail=f"shape {list(candidate.shape)}, the twin's {list(twin.shape)}")
    if (candidate.dtype.kind in "iu") != (twin.dtype.kind in "iu"):
        return OutputCheck(output=name, passed=False, detail=f"dtype {candidate.dtype}, the twin's {twin.dtype}")
    return _judged(name, errors(candidate, twin), derived, lambda measure: derived.bound(measure), "against the twin")


def check_live(name: str, candidate: np.ndarray, reference: np.ndarray, derived: DerivedTolerance) -> OutputCheck:
    """The twin rule where only a live baseline's output is at hand: within (k + 1) units of the bound of it."""
    if candidate.shape != reference.shape:
        return OutputCheck(output=name, passed=False, detail=f"shape {list(candidate.shape)}, the reference's {list(reference.shape)}")
    return _judged(name, errors(candidate, reference), derived, derived.live_bound, "against the live baseline")


def _judged(name: str, measured: dict[str, float], derived: DerivedTolerance, bound, against: str) -> OutputCheck:
    said, passed = [], True
    for measure, value in measured.items():
        allowed = bound(measure)
        ok = value <= allowed
        passed &= ok
        ratio = value / max(derived.baseline_error[measure], derived.floor)
        said.append(f"{measure} {value:.3g} {'<=' if ok else '>'} {allowed:.3g} ({ratio:.2f}x the baseline's, k = {derived.k:g})")
    worst = max(value / max(derived.baseline_error[measure], derived.floor) for measure, value in measured.items())
    hint = (" (if this is an honest reordering, a compile or another kernel, declare a looser rule: freeze again with k of "
            f"{worst * 1.2:.2g} or more, `workload freeze --k` or `optimize start --k`, or a tolerance)"
            if not passed and worst < TIGHT_MISS else "")
    return OutputCheck(output=name, passed=passed, detail=f"{against}: " + "; ".join(said) + hint)


def logprob_drift(a_ids: np.ndarray, a_logprobs: np.ndarray, b_ids: np.ndarray, b_logprobs: np.ndarray, a_tokens: np.ndarray,
                  b_tokens: np.ndarray) -> float:
    """The largest difference of one id's log-probability between two runs' top-k lists, over the steps of each row
    up to where their tokens first differ (after it they go on from other tokens); ids in one list only are skipped."""
    prompt = a_tokens.shape[1] - a_ids.shape[1]
    worst = 0.0
    for row in range(min(a_ids.shape[0], b_ids.shape[0])):
        for step in range(min(a_ids.shape[1], b_ids.shape[1])):
            theirs = dict(zip(map(int, b_ids[row, step]), map(float, b_logprobs[row, step]), strict=True))
            for i, value in zip(map(int, a_ids[row, step]), map(float, a_logprobs[row, step]), strict=True):
                if i in theirs:
                    worst = max(worst, abs(value - theirs[i]))
            if a_tokens[row, prompt + step] != b_tokens[row, prompt + step]:
                break
    return worst


def twin_name(name: str) -> str:
    return name + TWIN


def is_twin(name: str) -> bool:
    return name.endswith(TWIN)


def teacher_of(references: dict[str, np.ndarray]) -> dict[str, TeacherRequest]:
    """What a worker must score (teacher forcing) for the references given: tokens name -> {ids: the reference's tokens,
    prompt: their prompt's length} for each NAME.teacher whose tokens and top-k lists are among them."""
    wanted = [n[: -len(TEACHER)] for n in references if n.endswith(TEACHER) and not is_twin(n)]
    return {name: teacher_request(references[name], references[name + IDS]) for name in wanted
            if name in references and name + IDS in references}
