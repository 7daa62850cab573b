"""The kernel proposals a campaign makes itself: the frozen workload profiled once at its baseline knobs, and each
hand-off the fusion library covers, with a module forward to replace and no TODO, put into the model by integrate's
overrides module (the library's default params) and queued on the stack like an agent's proposal. What the profile
found but could not propose (no adapter for that kernel, no forward named by the trace's Python stack) becomes a
note, never a silently skipped candidate."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.models import ProfileRequest
from hyperloom.tools.workload.frozen import Frozen
from hyperloom.tools.workload.adapters import ADAPTERS
from hyperloom.tools.workload.integrate import write_overrides

NOTE_PREFIX = "profile: "  # how a queued proposal says the campaign made it (its proposer "profile")


@dataclass
class ProfileProposals:
    proposals: list[tuple[list[str], str]] = field(default_factory=list)  # (levers, note), most device time first
    notes: list[str] = field(default_factory=list)
    profile_json: str | None = None


def profile_proposals(frozen: Frozen, session: str, workspace: Workspace, timeout_s: float) -> ProfileProposals:
    target = frozen.target
    request = ProfileRequest(workload=target.workload, args=list(target.args), steps=1, warmup_steps=1, timeout_s=timeout_s,
                             name=f"optimize-{session}", plot=False)
    result = run_profile(request, workspace, knobs=dict(target.knobs))
    out = ProfileProposals(profile_json=next((f for f in result.files if f.endswith("profile.json")), None))
    seen: set[tuple[str, str]] = set()
    for handoff in result.handoff:
        if handoff.library is None:
            continue
        where = f"hand-off #{handoff.rank} ({handoff.library}, {' -> '.join(handoff.ops[:3])}{' ...' if len(handoff.ops) > 3 else ''})"
        if handoff.library not in ADAPTERS or not handoff.module or handoff.todos:
            why = "no adapter puts it in place of a method" if handoff.library not in ADAPTERS else \
                "the trace names no module forward it ran in" if not handoff.module else f"TODO: {'; '.join(handoff.todos)}"
            out.notes.append(f"{where} not proposed: {why}")
            continue
        if (handoff.library, handoff.module) in seen:
            continue
        seen.add((handoff.library, handoff.module))
        try:
            _, _, overrides = write_overrides(frozen.folder, handoff.library, handoff.module, {}, None, workspace)
        except HyperloomError as exc:
            out.notes.append(f"{where} not proposed: {exc.cause}")
            continue
        out.proposals.append(([f"overrides:{workspace.relative(overrides)}"],
                              f"{NOTE_PREFIX}{handoff.library} in place of {handoff.module} ({where}, the library's default params)"))
    return out
