"""Candidates a session starts from besides the baseline: the kernel's own autotuner's choice, learned on the device
once, queued, and gated and timed exactly as every other candidate; the report puts it beside the winner."""

from __future__ import annotations


from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.languages import language
from hyperloom.tools.triton.models import AutotuneChoice
from hyperloom.tools.tune.devices import worker_slots
from hyperloom.tools.tune.ledger import Ledger
from hyperloom.tools.tune.models import TrialRecord, TuneRequest
from hyperloom.tools.tune.session import Session, queue_candidate

NOTE = "the kernel's own @triton.autotune choice"


def prepare_session(session: Session, request: TuneRequest, workspace: Workspace) -> None:
    """Before the loop: refuse a backend whose times are not kernel times, then queue the kernel's own tuner's choice once."""
    for launchable in (session.launchable, *session.others.values()):
        refusal = language(launchable.language_name).timing_refusal(launchable.target)
        if refusal is not None:
            raise refusal
    own = session.launchable
    if session.ledger.own_tuner_choice() is not None:
        return
    device = worker_slots(own.backend, 1, request.devices)[0]
    choice = language(own.language_name).own_tuner_choice(own, session.inputs("seeded"), workspace, device)
    if choice is None:
        return
    if choice.determined:
        choice.hash = queue_candidate(session.manifest, session.ledger, dict(choice.params), NOTE).hash
    session.ledger.set_own_tuner_choice(choice)

def choice_in(ledger: Ledger, trials: list[TrialRecord]) -> AutotuneChoice | None:
    """The recorded choice with its trial's result and its ratio to the winner, for the report."""
    choice = ledger.own_tuner_choice()
    if choice is None:
        return None
    trial = next((t for t in trials if choice.hash and t.hash == choice.hash), None)
    passed = [t for t in trials if t.status == "PASSED" and t.median_s]
    winner = min(passed, key=lambda t: t.median_s, default=None)  # type: ignore[arg-type, return-value]
    if trial is not None:
        choice.status, choice.median_s = trial.status, trial.median_s
        if winner is not None and trial.median_s:
            choice.winner_speedup = trial.median_s / winner.median_s  # type: ignore[operator]
    return choice


def render(choice: AutotuneChoice | None) -> list[str]:
    """report.md's section on the kernel's own autotune choice."""
    if choice is None:
        return []
    lines = ["", "## The kernel's own @triton.autotune choice", ""]
    if not choice.determined:
        return lines + [f"Not determined: {choice.reason}."]
    timed = (f"{choice.median_s * 1e6:.2f} us as Hyperloom timed it (same gate, flush and statistics as every candidate)"
             if choice.median_s else f"not timed ({choice.status or 'not run yet'})")
    ratio = (" — the tune winner is the same config" if choice.winner_speedup is not None and abs(choice.winner_speedup - 1) < 1e-12
             else f"; the tune winner is {choice.winner_speedup:.3f}x faster" if choice.winner_speedup else "")
    return lines + [f"Config {choice.config_index} (`{choice.config}`), picked by {choice.reason}: {timed}{ratio}."]
