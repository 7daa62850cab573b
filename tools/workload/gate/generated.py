"""The gate for generated tokens, which may part from the reference only at a near tie (the rule vLLM's model tests
apply between two implementations of one model: compare the tokens until they first differ, require each side's
token among the other's top log-probabilities there, and stop, since the two go on from different tokens).

A workload opts in by returning, beside an integer output `tokens` of shape [batch, prompt + steps], its per-step
top-k log-probabilities as `tokens.top_ids` (integers) and `tokens.top_logprobs` (floats), both [batch, steps, k],
highest first. Exact tokens are the wrong gate for a decoder in bf16: a kernel within a few thousandths of the
reference's logits flips a near tie, and greedy decoding then goes on from another token. This gate asks instead,
per row:

- the prompt equal;
- at every step up to the first unequal token, the two top-k lists agree within the tolerance declared for
  `tokens.top_logprobs` (an id in both: its two values within it; an id in one list only: the other list's lowest
  value no further below it than the tolerance, else the other side must have ranked it);
- at that first unequal token: the candidate's token among the reference's top k, and the reference's margin between
  its own token and the candidate's no wider than the two tokens' tolerances added, the widest gap numerics inside
  the tolerance can flip;
- after it, nothing: the positions left are counted and reported as not compared.

A candidate must therefore reproduce the reference's log-probabilities, within the declared tolerance, up to its
first different token, and may differ only where the reference itself was near a tie.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from hyperloom.tools.workload.models import OutputCheck, OutputTolerance

IDS, LOGPROBS = ".top_ids", ".top_logprobs"


def companions(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """token output -> (its top-k ids output, its top-k log-probabilities output), for outputs that come with both."""
    present = set(names)
    return {name: (name + IDS, name + LOGPROBS) for name in present if name + IDS in present and name + LOGPROBS in present}


def grouped(paired: dict[str, tuple[str, str]]) -> set[str]:
    """Every output `companions` paired: the tokens and their two companions, judged together by this gate."""
    return set(paired) | {n for pair in paired.values() for n in pair}


@dataclass(frozen=True)
class Generated:
    """One side's tokens and top-k lists, checked for shape by `judge`."""

    tokens: np.ndarray  # [batch, prompt + steps]
    ids: np.ndarray  # [batch, steps, k]
    logprobs: np.ndarray  # [batch, steps, k]

    @property
    def prompt(self) -> int:
        return self.tokens.shape[1] - self.ids.shape[1]


@dataclass(frozen=True)
class Row:
    """One row's verdict: why it failed (None: it passed), where it parted at a near tie and by what margin in nats."""

    failure: str | None = None
    parted_at: int | None = None
    margin: float | None = None
    not_compared: int = 0
    other_length: str | None = None  # equal to its end, in an output of another length: fine only when a row parted


def shape_error(side: str, tokens: np.ndarray, ids: np.ndarray, logprobs: np.ndarray) -> str | None:
    if tokens.ndim != 2 or ids.ndim != 3 or ids.shape != logprobs.shape:
        return (f"{side}: tokens {list(tokens.shape)} must be [batch, prompt + steps], top_ids {list(ids.shape)} and top_logprobs "
                f"{list(logprobs.shape)} the same [batch, steps, k]")
    if ids.shape[0] != tokens.shape[0] or ids.shape[1] > tokens.shape[1] or ids.shape[2] < 1:
        return f"{side}: top_ids {list(ids.shape)} do not fit tokens {list(tokens.shape)} (one list of k >= 1 per generated token)"
    if ids.dtype.kind not in "iu" or tokens.dtype.kind not in "iu" or logprobs.dtype.kind != "f":
        return f"{side}: tokens and top_ids must be integers, top_logprobs floats (got {tokens.dtype}, {ids.dtype}, {logprobs.dtype})"
    return None


def check(name: str, candidate: Generated, reference: Generated, tolerance: OutputTolerance) -> list[OutputCheck]:
    """The verdicts for `name` and its two companions: one judgement, written on the tokens' check."""
    ids_name, logprobs_name = name + IDS, name + LOGPROBS
    passed, detail = judge(candidate, reference, tolerance)
    read = f"judged with {name} (its near-tie gate)"
    return [OutputCheck(output=name, passed=passed, detail=detail), OutputCheck(output=ids_name, passed=passed, detail=read),
            OutputCheck(output=logprobs_name, passed=passed, detail=read)]


def judge(candidate: Generated, reference: Generated, tolerance: OutputTolerance) -> tuple[bool, str]:
    for side, g in (("the candidate", candidate), ("the reference", reference)):
        error = shape_error(side, g.tokens, g.ids, g.logprobs)
        if error:
            return False, error
    if (candidate.tokens.shape[0] != reference.tokens.shape[0] or candidate.prompt != reference.prompt
            or candidate.ids.shape[2] != reference.ids.shape[2]):
        return False, (f"tokens {list(candidate.tokens.shape)} with top-k lists {list(candidate.ids.shape)}; the frozen baseline's "
                       f"{list(reference.tokens.shape)} and {list(reference.ids.shape)} (batch, prompt and k must match)")
    if not np.array_equal(candidate.tokens[:, :candidate.prompt], reference.tokens[:, :reference.prompt]):
        return False, "the prompt differs from the frozen baseline's"
    rows = [_row(b, candidate, reference, tolerance) for b in range(reference.tokens.shape[0])]
    failed = [r.failure for r in rows if r.failure]
    if not any(r.parted_at is not None for r in rows):  # a length generate cut at the last row's EOS: only a parting changes it
        failed += [r.other_length for r in rows if r.other_length]
    if failed:
        return False, f"{len(failed)}/{len(rows)} rows fail: " + "; ".join(failed[:3])
    return True, _summary(rows, reference, tolerance)


def parted_rows(candidate: Generated, reference: Generated, tolerance: OutputTolerance) -> dict[int, int]:
    """Row -> the step where it parted at a near tie, for a candidate that passed `judge` (the rows not compared after)."""
    if candidate.tokens.shape[0] != reference.tokens.shape[0]:
        return {}
    rows = {b: _row(b, candidate, reference, tolerance) for b in range(reference.tokens.shape[0])}
    return {b: r.parted_at for b, r in rows.items() if r.parted_at is not None and r.failure is None}


def _row(b: int, candidate: Generated, reference: Generated, tolerance: OutputTolerance) -> Row:
    k = reference.ids.shape[2]
    steps_c, steps_r = candidate.ids.shape[1], reference.ids.shape[1]
    for t in range(min(steps_c, steps_r)):
        apart = lists_apart(candidate.ids[b, t], candidate.logprobs[b, t], reference.ids[b, t], reference.logprobs[b, t], tolerance)
        if apart:
            return Row(failure=f"row {b} step {t}: {apart}")
        mine, theirs = int(candidate.tokens[b, candidate.prompt + t]), int(reference.tokens[b, reference.prompt + t])
        if mine == theirs:
            continue
        values = dict(zip(map(int, reference.ids[b, t]), map(float, reference.logprobs[b, t]), strict=True))
        if theirs not in values:
            return Row(failure=f"row {b} step {t}: the reference's own token {theirs} is not among its top {k}: return more "
                               "log-probabilities")
        if mine not in values:
            lowest = min(values.values())
            undecided = values[theirs] - lowest <= _allowed(values[theirs], tolerance) + _allowed(lowest, tolerance)
            return Row(failure=f"row {b} step {t}: token {mine}, not among the reference's top {k} (it chose {theirs})"
                       + (f", whose lowest is within the tolerance of its pick: a near tie cannot be told from a wrong token; return more "
                          f"log-probabilities (k above {k})" if undecided else ""))
        margin, bound = values[theirs] - values[mine], _allowed(values[theirs], tolerance) + _allowed(values[mine], tolerance)
        if margin > bound:
            return Row(failure=f"row {b} step {t}: token {mine} where the reference chose {theirs} by {margin:.3g} nats, more than a tie "
                               f"within the tolerance ({bound:.3g})")
        return Row(parted_at=t, margin=margin, not_compared=steps_r - t - 1)
    if steps_c != steps_r:
        return Row(other_length=f"row {b}: {steps_c} generated tokens, the reference's {steps_r}, with no token apart in any row")
    return Row()


def lists_apart(ids_c: np.ndarray, lp_c: np.ndarray, ids_r: np.ndarray, lp_r: np.ndarray, tolerance: OutputTolerance) -> str | None:
    """Why two top-k lists at one step disagree beyond the tolerance (None: they agree): the candidate's (c) and the
    reference's (r)."""
    if not np.all(np.isfinite(lp_c)):
        return "a log-probability of the candidate is NaN or infinite"
    mine = dict(zip(map(int, ids_c), map(float, lp_c), strict=True))
    theirs = dict(zip(map(int, ids_r), map(float, lp_r), strict=True))
    lowest_c, lowest_r = min(mine.values()), min(theirs.values())
    for i, value in theirs.items():
        allowed = _allowed(value, tolerance)
        if i in mine and abs(mine[i] - value) > allowed:
            return f"id {i} has log-probability {mine[i]:.5g}, the reference's {value:.5g} (allowed +-{allowed:.3g})"
        if i not in mine and value - allowed > lowest_c:
            return f"id {i} ({value:.5g} in the reference) is missing from the candidate's top {len(mine)}, whose lowest is {lowest_c:.5g}"
    for i, value in mine.items():
        if i not in theirs and value - _allowed(value, tolerance) > lowest_r:
            return f"id {i} ({value:.5g}) is in the candidate's top {len(mine)}, not in the reference's, whose lowest is {lowest_r:.5g}"
    return None


def _allowed(value: float, tolerance: OutputTolerance) -> float:
    return tolerance.atol + tolerance.rtol * abs(value)


def _summary(rows: list[Row], reference: Generated, tolerance: OutputTolerance) -> str:
    steps, k = reference.ids.shape[1], reference.ids.shape[2]
    parted = [r for r in rows if r.parted_at is not None]
    text = (f"{len(rows) - len(parted)}/{len(rows)} rows equal to the end, top-{k} log-probabilities within atol {tolerance.atol:g}, "
            f"rtol {tolerance.rtol:g}")
    if parted:
        uncompared = sum(r.not_compared for r in parted)
        text += (f"; {len(parted)} parted at a near tie (steps "
                 f"{', '.join(str(r.parted_at) for r in parted[:8])}{'...' if len(parted) > 8 else ''}; margins up to "
                 f"{max(r.margin or 0.0 for r in parted):.3g} nats), {uncompared} of {len(rows) * steps} generated tokens after a parting "
                 "not compared")
    return text
