"""When a campaign stops: the hard rules before any measurement (a stop request, the device-hour budget, the wall-clock
deadline), the rules that end only its search (count, patience, target, the time what follows the search needs), and
the time at which a running trial is cut."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.keys import measurement_key, point_of
from hyperloom.tools.optimize.ledger import Ledger
from hyperloom.tools.optimize.models import TIMED, OptimizeRequest, Phase, Record
from hyperloom.tools.optimize.order import fastest_first

AFTER_SEARCH = "what follows it (keeping the best winner, a rival's revalidation, the sweep)"
DEADLINE_GRACE_S = 20.0  # a trial still running at the deadline gets this long to answer, then its workers are killed
# the phases a stop rule may end early (what follows: settle, the sweep)
SEARCH: frozenset[Phase] = frozenset({"levers", "combine", "kernels"})


@dataclass
class Control:
    """How a front end steers a running campaign: a stop flag, and whether it opened."""

    stop: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)


class Stopped(Exception):
    """A stop rule fired. `hard` (stop, budget, deadline): nothing more runs; else only the search ends (the sweep runs)."""

    def __init__(self, reason: str, hard: bool) -> None:
        super().__init__(reason)
        self.reason, self.hard = reason, hard


class StopRules:
    """The stop rules of one campaign, read from its request, its ledger and the time it started (time.monotonic())."""

    def __init__(self, request: OptimizeRequest, ledger: Ledger, control: Control, declared_knobs: dict[str, list[str] | None],
                 workspace: Workspace) -> None:
        self.request, self.ledger, self.control, self.declared_knobs, self.workspace = request, ledger, control, declared_knobs, workspace
        self.started = time.monotonic()

    def check(self) -> None:
        """The hard rules, before any measurement: a stop request, the device-hour budget, the deadline."""
        if self.control.stop.is_set() or self.ledger.get("stop_requested"):
            raise Stopped("stopped on request (optimize stop)", hard=True)
        spent = self.ledger.spent_s()
        if spent >= self.request.budget_device_s:
            raise Stopped(f"device-hour budget spent ({spent:.1f} of {self.request.budget_device_s:g} device-s)", hard=True)
        if self.request.deadline_s is not None and time.monotonic() - self.started >= self.request.deadline_s:
            raise self.deadline_reached()

    def deadline_reached(self) -> Stopped:
        return Stopped(f"wall-clock deadline of {self.request.deadline_s or 0:g} s reached", hard=True)

    def check_search(self) -> None:
        """The hard rules, then those that end the search (the sweep still runs): count, patience, target."""
        self.check()
        tried = self.ledger.candidates()
        if len(tried) >= self.request.max_candidates:
            raise Stopped(f"reached max_candidates ({self.request.max_candidates})", hard=False)
        if self.request.patience is not None:
            since = 0
            for record in tried:
                since = 0 if record.decision in ("KEEP", "WINNER") else since + (record.result.verdict in TIMED)
            if since >= self.request.patience:
                raise Stopped(f"patience: {since} timed candidates in a row without a gain beyond the noise band", hard=False)
        gain = self.ledger.gain()
        if self.request.target_speedup is not None and gain is not None and gain >= self.request.target_speedup:
            raise Stopped(f"reached the target speedup of {self.request.target_speedup:g}x ({gain:.3g}x measured)", hard=False)
        left_s = None if self.request.deadline_s is None else self.request.deadline_s - (time.monotonic() - self.started)
        why = sweep_reserve(self.sweep_reserve_s(), left_s, self.request.budget_device_s - self.ledger.spent_s())
        if why is not None:
            raise Stopped(why, hard=False)

    def sweep_reserve_s(self) -> float:
        """What the campaign needs when it ends its search now: what follows the search (after_search_s), and when any
        of that is due, the trial the search is about to start (docs/decisions.md: The time the end of the search needs)."""
        after_s, mean_s = self.after_search_s(), self.ledger.mean_trial_s()
        return after_s + mean_s if after_s and mean_s else 0.0

    def after_search_s(self) -> float:
        """What the campaign still needs after its search, each trial at the mean device time of the trials so far (a
        sweep trial builds both sides at the point, as a candidate trial does): with winners but no stack yet, the
        best winner's revalidation (settle) and, with another winner, one rival's (a stack whose revalidation falls
        short tries the next winner alone); with a stack, its points not yet swept."""
        points = self.ledger.baseline().get("points", [])
        mean_s = built_trial_s(self.ledger.records())
        if mean_s is None:
            return 0.0
        stack, winners = self.ledger.stack(), fastest_first(self.ledger.winners())
        if stack:
            settle = int(self.ledger.gain() is None)  # its revalidation, if still due (cut or killed before a resume)
        else:
            settle = 1 + (len(winners) > 1) if winners else 0
        stack = stack or (winners[0].result.levers if winners else [])
        valid = [p for p in (point_of(raw, self.declared_knobs) for raw in points) if p is not None] if stack else []
        left = settle + sum(self.ledger.find(measurement_key("sweep", [], stack, point, self.workspace)) is None for point in valid)
        return left * mean_s

    def ends_at(self, phase: Phase) -> float | None:
        """time.monotonic() at which a trial of `phase` is cut: a search trial where what follows the search must start
        (after_search_s before the deadline: a max-autotune compile that runs to its timeout cannot take the time
        keeping a winner needs; no grace added: docs/decisions.md, The time the end of the search needs), any other at
        the deadline with DEADLINE_GRACE_S to answer. None: no deadline."""
        if self.request.deadline_s is None:
            return None
        deadline = self.started + self.request.deadline_s
        after_s = self.after_search_s() if phase in SEARCH else 0.0
        return deadline - after_s if after_s else deadline + DEADLINE_GRACE_S

    def room_for_a_trial(self) -> bool:
        """Whether one more trial, at the mean device time of those so far, ends before the deadline."""
        mean_s = self.ledger.mean_trial_s()
        if self.request.deadline_s is None or mean_s is None:
            return True
        return time.monotonic() - self.started + mean_s < self.request.deadline_s


def built_trial_s(records: list[Record]) -> float | None:
    """The mean device seconds of the trials whose worker was built for them (worker_turn 1), the baseline's own left
    out; of every trial when none was; None before the first. A served candidate takes a fraction of a built one's time,
    so the mean of all trials would leave a revalidation no room (docs/decisions.md: The time the end of the search needs)."""
    trials = [r for r in records if r.device_s > 0 and r.phase != "baseline"]
    built = [r.device_s for r in trials if r.result.worker_turn == 1] or [r.device_s for r in trials]
    return sum(built) / len(built) if built else None


def sweep_reserve(reserve_s: float, deadline_left_s: float | None, budget_left_s: float) -> str | None:
    """Why the search ends now so that the sweep still fits (a soft stop: the sweep runs), or None: the deadline's
    or the budget's remaining seconds no longer cover the sweep's expected time."""
    if reserve_s <= 0:
        return None
    if deadline_left_s is not None and deadline_left_s <= reserve_s:
        return (f"the search ended {deadline_left_s:.0f} s before the wall-clock deadline, which {AFTER_SEARCH} needs: "
                f"{reserve_s:.0f} s expected")
    if budget_left_s <= reserve_s:
        return (f"the search ended with {budget_left_s:.0f} device-s of the budget left, which {AFTER_SEARCH} needs: "
                f"{reserve_s:.0f} s expected")
    return None
