"""The campaign's orderings: the catalog tried cheapest first and its tuners last, winners ranked by their own legs,
rivals that share nothing with an unsteady stack first, and which lever is worth another try on a stack. The
measurements behind each: docs/decisions.md, The orderings."""

from __future__ import annotations

import statistics

from hyperloom.tools.optimize.models import Record
from hyperloom.tools.workload.levers import BY_NAME, CATALOG

# cheapest first: a knob costs a build, a compile minutes
# tried last, whatever their kind
TUNERS = frozenset({"tunableop", "compile_max_autotune", "compile_max_autotune_no_cudagraphs", "inductor_coordinate_descent"})
COST = {"knob": 0, "setting": 1, "stance": 1, "layout": 1, "fusion": 1, "quantize": 1, "kernel": 1, "cache": 2, "env": 2, "sdpa": 3,
        "graph": 4, "compile": 5, "generate": 5}


def catalog_order(vendor: str) -> list[str]:
    """The catalog's levers for `vendor`, cheapest first, the searching ones last (TUNERS: each tunes per shape, and
    can take minutes a campaign needs for the rest)."""
    levers = sorted((item for item in CATALOG if vendor in item.vendors),
                    key=lambda item: (item.name in TUNERS, COST[item.kind], item.name))
    return [item.name for item in levers]


def fastest_first(winners: list[Record]) -> list[Record]:
    """Winners by their own step, the median of their timed legs on the controller's clock, shortest first (by speedup
    where a winner has no legs): each was timed beside the same baseline, whose pace moves from trial to trial, so a
    ratio ranks a winner partly by its reference's pace."""
    if winners and all(w.result.candidate_legs_s for w in winners):
        return sorted(winners, key=lambda w: statistics.median(w.result.candidate_legs_s))
    return sorted(winners, key=lambda w: -(w.result.speedup or 0))


def rival_order(winners: list[Record], stack: list[str]) -> list[Record]:
    """The winners in the order the rival check tries them: those that share no lever with the stack first, then the
    rest, each group fastest first: a stack whose gain did not hold points first at its own levers' kin, and the
    deadline may leave room for one rival only. Fastest: fastest_first's order."""
    kept = set(stack)
    return sorted(fastest_first(winners), key=lambda w: bool(kept & set(w.result.levers)))  # stable: fastest first in each group


def engaged_without_gain(record: Record) -> bool:
    """A lever measured alone against the baseline that engaged (each of its engagement checks held) without being
    faster. What it enables may still pay (a static cache on a CPU: no faster alone, decode_loop's way in), and on a
    host-bound step (an eager decode launches each kernel from Python) a device-side gain hides behind the host.
    Catalog levers only: a knob or an overrides module is "engaged" by being taken, which says nothing of what it did.
    The verdict is not read: a REJECTED enabler's follow-ups run too, each gated on its own fresh inputs; a wrong
    lever's follow-ups are refused the same way (docs/decisions.md: The orderings)."""
    result = record.result
    return (len(result.levers) == 1 and result.levers[0] in BY_NAME and not record.reference and bool(result.engagement)
            and all(e.engaged for e in result.engagement))
