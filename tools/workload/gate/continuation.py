"""After a near-tie parting, the candidate's own continuation judged by the reference's model.

The near-tie gate (generated.py) stops comparing a row where the candidate parted from the reference at a near tie:
the two go on from different tokens. Left there, a candidate may part at the first tie and pad the rest (a cheat
that passed). So the reference's worker scores the candidate's whole sequence (teacher forcing: one forward over
the candidate's tokens), and every token the candidate generated after its parting must be what the reference's
model would pick on the candidate's own prefix, or a near tie of it (within the two tokens' tolerances added, the
margin the parting itself was allowed), and the top-k log-probabilities it reported there must be the reference
model's on that prefix, within twice their tolerance (teacher forcing computes them in one forward, the candidate's
generate one token at a time): logits reused from an earlier step, or invented, are refused. After a row's EOS (the
model's own ids) only its pad may follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hyperloom.tools.workload.gate.generated import Generated, companions, lists_apart, parted_rows
from hyperloom.tools.workload.models import OutputCheck, OutputTolerance
from hyperloom.tools.workload.wire import teacher_request

if TYPE_CHECKING:
    from hyperloom.tools.workload.process import WorkloadProcess


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def judge(name: str, candidate: Generated, reference: Generated, scored: np.ndarray, tolerance: OutputTolerance, eos: Sequence[int],
          pad: int | None) -> OutputCheck | None:
    """None when no row parted; else whether every token after each parting is the reference model's pick, or a near
    tie of it, on the candidate's prefix. `scored`: the reference model's logits at the candidate's generated
    positions [batch, steps, vocabulary]."""
    parted = parted_rows(candidate, reference, tolerance)
    if not parted:
        return None
    steps = candidate.ids.shape[1]
    if scored.shape[:2] != (candidate.tokens.shape[0], steps):
        generated = [candidate.tokens.shape[0], steps]
        return OutputCheck(output=name, passed=False,
                           detail=f"the reference scored {list(scored.shape[:2])} positions, the candidate generated {generated}")
    checked = 0
    for row, at in parted.items():
        logprobs = log_softmax(scored[row])
        stopped = int(candidate.tokens[row, candidate.prompt + at]) in eos  # the parting token itself may be the EOS
        for step in range(at + 1, steps):
            token = int(candidate.tokens[row, candidate.prompt + step])
            if stopped:
                if pad is not None and token != pad:
                    return OutputCheck(output=name, passed=False,
                                       detail=f"row {row} step {step}: token {token} after the row's EOS, not the pad {pad}")
                continue
            reported = _reported_apart(candidate, row, step, logprobs[step], tolerance)
            if reported is not None:
                return OutputCheck(output=name, passed=False, detail=(
                    f"row {row} step {step}, after its parting at step {at}: the log-probabilities it reported are not the reference "
                    f"model's on its own prefix: {reported}"))
            best = int(np.argmax(logprobs[step]))
            margin = float(logprobs[step, best] - logprobs[step, token])
            bound = 2 * (tolerance.atol + tolerance.rtol * abs(float(logprobs[step, best])))
            if margin > bound:
                return OutputCheck(output=name, passed=False, detail=(
                    f"row {row} step {step}, after its parting at step {at}: token {token}, which the reference's model rates {margin:.3g} "
                    f"nats below its own pick {best} on the candidate's prefix (a near tie allows {bound:.3g})"))
            checked += 1
            stopped = token in eos
    return OutputCheck(output=name, passed=True,
                       detail=f"{checked} token(s) after {len(parted)} parting(s) scored by the reference's model: each its pick or a near "
                              "tie")


def _reported_apart(candidate: Generated, row: int, step: int, scored: np.ndarray, tolerance: OutputTolerance) -> str | None:
    """Why the candidate's top-k list at (row, step) is not the reference model's log-probabilities `scored` there (its
    own top k of them), within twice the tolerance; None where it is."""
    k = candidate.ids.shape[2]
    top = np.argsort(-scored, kind="stable")[:k]
    wide = tolerance.model_copy(update={"atol": 2 * tolerance.atol, "rtol": 2 * tolerance.rtol})
    return lists_apart(candidate.ids[row, step], candidate.logprobs[row, step], top, scored[top], wide)


def checks(reference: WorkloadProcess, candidate: Path, references: dict[str, np.ndarray], tolerances: dict[str, OutputTolerance],
           folder: Path) -> list[OutputCheck]:
    """The continuation check of every generated output in `references` whose candidate (saved in `candidate`: its
    first outputs, on the workload's inputs as built) parted at a near tie, scored by the `reference` worker's model
    beside its copy of those inputs (an encoder-decoder's encoder input, a decoder's padded prompt); nothing where no
    row parted or the model gives no logits."""
    found = []
    for tokens, (ids, logprobs) in companions(references).items():
        paths = [candidate / f"{n}.npy" for n in (tokens, ids, logprobs)]
        if not all(p.is_file() for p in paths):
            continue
        mine = Generated(*(np.load(p, allow_pickle=False) for p in paths))
        theirs = Generated(*(references[n] for n in (tokens, ids, logprobs)))
        if not parted_rows(mine, theirs, tolerances[logprobs]):
            continue
        # a candidate's first outputs: the inputs as built
        said = reference.score(folder, {tokens: teacher_request(mine.tokens, mine.ids)}, inputs="built")
        if tokens not in said["scored"]:
            continue
        check = judge(tokens, mine, theirs, np.load(folder / f"{tokens}.scored.npy", allow_pickle=False), tolerances[logprobs], said["eos"],
                      said["pad"])
        if check is not None:
            found.append(check.model_copy(update={"output": f"{tokens} after its parting"}))
    return found
