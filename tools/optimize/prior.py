"""What has engaged and won together on this kind of model before: the stack a campaign tries first.

A campaign affords few candidates on a large model, and levers tried one at a time, cheapest first, may never meet
the stack that wins together (docs/decisions.md: A prior tried first, then ablated). A prior is that evidence put
first, not a recipe: one candidate stacking its levers, measured against the baseline like any
other (gated, engagement read off its profiled step, judged by its pairs), before the catalog's levers alone, which
still follow and are stacked on it by the combine phase. A prior's lever that cannot act here (its need unmet on the
baseline and not brought by the prior's own levers, lossy beyond the declared tolerance, or not among the levers
asked for) is left out and named.

Two sources: SHIPPED, each naming the measurement it comes from, matched where its `kind` is part of the baseline's;
and the workspace's own (`.hyperloom/priors/optimize.json`), each campaign that closes with a revalidated stack of
two levers or more recording it for models of exactly its kind, on its vendor. The workspace's newest match wins
over a shipped one: it was measured here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.applies import STACK_MAY_BRING, brought, unmet
from hyperloom.tools.profile.classify import op_class
from hyperloom.tools.workload.levers import BY_NAME

RECORDED = ("priors", "optimize.json")  # the workspace's .hyperloom/priors/optimize.json
KEPT_AT_MOST = 50  # recorded priors kept, newest last


@dataclass(frozen=True)
class Prior:
    """Levers that won together on models of `kind` (what kind_of reads off a baseline), on `vendors`."""

    kind: frozenset[str]
    vendors: frozenset[str]
    levers: tuple[str, ...]
    evidence: str  # where it was measured: the figure and its results page, or the campaign that recorded it


SHIPPED: tuple[Prior, ...] = (
    Prior(frozenset({"generate", "decoder_only"}), frozenset({"cuda"}),
          ("static_cache", "decode_loop", "fuse_projections", "decode_attention", "decode_gemv", "inductor_combo_kernels"),
          "MEASURED on an H100: a Llama-3.2-1B-shaped plain greedy generate's campaign kept these six levers together, "
          "revalidated 7.23x against eager, 1.205 ms a token (results/h100/roof, session 33)"),
)


def kind_of(facts: dict[str, Any], evidence: dict[str, Any]) -> frozenset[str]:
    """The baseline's kind, in the words priors are matched by: what its worker read off the model (a generate, an
    encoder-decoder or a decoder only, sibling projections) and what its profiled step ran (attention, GEMMs,
    convolutions)."""
    words = set()
    if facts.get("generate"):
        words.add("generate")
        words.add("encoder_decoder" if facts.get("encoder_decoder") else "decoder_only")
    if facts.get("projection_groups"):
        words.add("projections")
    classes = {op_class(op) for op in (evidence.get("ops") or {})}
    words |= {name for name in ("attention", "gemm") if name in classes}
    if any("convolution" in op for op in evidence.get("ops") or {}):
        words.add("convolution")
    return frozenset(words)


def prior_for(kind: frozenset[str], vendor: str, workspace: Workspace) -> Prior | None:
    """The prior a campaign on a baseline of `kind` tries first: the workspace's newest of exactly this kind and
    vendor, else the first shipped one whose kind is part of it, else None."""
    for entry in reversed(recorded(workspace)):
        if frozenset(entry["kind"]) == kind and entry["vendor"] == vendor:
            return Prior(kind, frozenset({vendor}), tuple(entry["levers"]),
                         f"MEASURED in this workspace: campaign {entry['session']!r} on {entry['device']} kept them together, "
                         f"revalidated {entry['gain']:.3g}x ({entry['at']})")
    return next((p for p in SHIPPED if p.kind <= kind and vendor in p.vendors), None)


def acting(found: Prior, allowed: set[str], facts: dict[str, Any], evidence: dict[str, Any], lossy: bool) -> tuple[list[str], list[str]]:
    """(the prior's levers that can act on this baseline, in its order; the others, each with why): a lever among
    `allowed` (the campaign's), not lossy unless `lossy` (a looser tolerance declared, or the levers listed), whose need
    the baseline meets or the prior's earlier levers (or what a stack brings: compiled code, graph launches) bring."""
    levers: list[str] = []
    left: list[str] = []
    for name in found.levers:
        item = BY_NAME.get(name)
        lacking = unmet(item, facts, evidence) if item is not None else None
        if item is None or name not in allowed:
            left.append(f"{name} (not among this campaign's levers)")
        elif item.lossy and not lossy:
            left.append(f"{name} (it changes numerics beyond the model's own)")
        elif lacking is not None and not (lacking.deferred and (item.needs in brought(levers) or item.needs in STACK_MAY_BRING)):
            left.append(f"{name} ({lacking.reason})")
        else:
            levers.append(name)
    return levers, left


def recorded(workspace: Workspace) -> list[dict[str, Any]]:
    """The workspace's recorded priors, oldest first (none where the file is missing or unreadable)."""
    path = _path(workspace)
    try:
        entries = json.loads(path.read_text()) if path.is_file() else []
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict) and {"kind", "vendor", "levers", "gain", "session", "device", "at"} <= e.keys()]


def record(workspace: Workspace, kind: frozenset[str], vendor: str, device: str, levers: list[str], gain: float, session: str,
           at: str) -> None:
    """A campaign's revalidated stack, recorded for the next campaign on a model of this kind (its own entry replaced)."""
    entries = [e for e in recorded(workspace) if e["session"] != session]
    entries.append({"kind": sorted(kind), "vendor": vendor, "device": device, "levers": list(levers), "gain": round(gain, 4),
                    "session": session, "at": at})
    write_bytes_atomic(_path(workspace), json.dumps(entries[-KEPT_AT_MOST:], indent=1).encode())


def _path(workspace: Workspace) -> Path:
    return workspace.state_dir(RECORDED[0]) / RECORDED[1]
