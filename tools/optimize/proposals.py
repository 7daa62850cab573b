"""The kernel proposals a campaign makes itself: the frozen workload profiled once with the stack the levers left
(every lever of it in place: knobs as the worker's build takes them, the others applied in a workload worker and
warmed up, so a compiled or graph-replayed stack is profiled as it runs, not as the eager model ran), and each
hand-off the fusion library covers, with a module forward to replace and no TODO, put into the model by integrate's
overrides module (the library's default params) and queued on the stack like an agent's proposal. What the profile
found but could not propose (no adapter for that kernel, no forward named by the trace's Python stack) becomes a
note, never a silently skipped candidate. The profile's GPU busy share says how much of the step a kernel can act on
at all: a step the host holds gains little from faster kernels (docs/decisions.md: The profile's proposals), and the
campaign's notes say so before its kernel trials."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.models import ProfileRequest
from hyperloom.tools.profile.workload import Capture, capture_of
from hyperloom.tools.workload.gate.frozen import Frozen
from hyperloom.tools.workload.ab import target_with
from hyperloom.tools.workload.adapters import ADAPTERS
from hyperloom.tools.workload.integrate import write_overrides
from hyperloom.tools.workload.freeze import refusal
from hyperloom.tools.workload.levers import Lever, prepared
from hyperloom.tools.workload.process import WorkloadFailure, WorkloadProcess

NOTE_PREFIX = "profile: "  # how a queued proposal says the campaign made it (its proposer "profile")


@dataclass
class ProfileProposals:
    proposals: list[tuple[list[str], str]] = field(default_factory=list)  # (levers, note), most device time first
    notes: list[str] = field(default_factory=list)
    profile_json: str | None = None
    busy_percent: float | None = None  # MEASURED in the profiled step; None on a CPU


WARMUP_STEPS = 2  # as a campaign's trials warm up: a compile, then the step that compiled graphs replay in
HOST_BOUND_PERCENT = 50.0  # below this GPU busy share a kernel can shorten less than half the step


def profile_proposals(frozen: Frozen, session: str, workspace: Workspace, timeout_s: float, stack: list[str] | None = None,
                      bytes_per_replay: int | None = None) -> ProfileProposals:
    """Profile the frozen workload with every lever of `stack` in place and turn its hand-offs into proposals;
    `bytes_per_replay` sets a replayed graph's roof (profile/replays.py)."""
    target = frozen.target
    chosen = prepared(stack or [], frozen.vendor, frozen.declared_knobs, workspace)
    name = f"optimize-{session}"  # the profile's folder, where a stack's capture is recorded too
    knobs = dict(target_with(target, chosen).knobs)
    others = [item for item in chosen if item.kind != "knob"]
    captured = _stack_capture(frozen, chosen, workspace.state_dir("profile", name), workspace, timeout_s) if others else None
    kv_bytes = int(captured.extra.get("kv_read_bytes_per_replay") or 0) if captured is not None else 0
    request = ProfileRequest(workload=target.workload, args=list(target.args), steps=1, warmup_steps=1, timeout_s=timeout_s, name=name,
                             plot=False, bytes_per_replay=bytes_per_replay + kv_bytes if bytes_per_replay else None)
    result = run_profile(request, workspace, knobs=knobs, captured=captured)
    out = ProfileProposals(profile_json=next((f for f in result.files if f.endswith("profile.json")), None),
                           busy_percent=result.busy_percent)
    out.notes.append("the kernel proposals' profile ran "
                     f"{'with ' + ' + '.join(item.name for item in chosen) if chosen else 'at the baseline'}"
                     + (" (each lever in place, warmed up, in a workload worker)" if others else ""))
    if result.busy_percent is not None:
        out.notes.append(host_note(result.busy_percent))
    if result.replays is not None:  # a decode loop's token graph: where a token's time goes (profile/replays.py)
        out.notes += result.replays.findings
        if result.replays.roof is not None:
            out.notes.append(roof_note(bytes_per_replay or 0, kv_bytes))
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


def _stack_capture(frozen: Frozen, chosen: list[Lever], folder: Path, workspace: Workspace, timeout_s: float) -> Capture:
    """One step of the stack recorded by torch.profiler in a workload worker that built it with `chosen` and warmed it
    up (a compile, a graph capture, the decode loop's first graphs happen there, not in the recorded step)."""
    trace, averages = folder / "trace.json", folder / "key_averages.json"
    try:
        with WorkloadProcess(target_with(frozen.target, chosen), chosen, folder / "worker", workspace, timeout_s) as process:
            process.warmup(WARMUP_STEPS)
            report = process.trace(trace, averages, steps=1)
    except WorkloadFailure as failure:
        raise refusal(failure, frozen.target.workload, timeout_s) from None
    return capture_of(report, trace, averages)


def roof_note(weight_bytes: int, kv_bytes: int) -> str:
    """What a replay's roof counts: the weights read once, and the KV cache's filled slots read once by each replayed
    decode step (decode_loop's count, MEASURED in the profiled worker) where the loop ran."""
    said = f"the replay's roof counts the model's weights read once ({weight_bytes / 1e6:.1f} MB, the baseline's parameter bytes)"
    if kv_bytes:
        return f"{said} and the KV cache's filled slots read once a step ({kv_bytes / 1e6:.2f} MB a replayed step, the decode loop's mean)"
    return f"{said}; no decode loop counted its KV cache read, so the percent of the roof is a lower bound"


def host_note(busy_percent: float) -> str:
    """What the profiled step's GPU busy share (MEASURED) bounds: the share of the step a kernel can act on."""
    said = f"GPU busy {busy_percent:.1f} % of the profiled step (MEASURED)"
    if busy_percent >= HOST_BOUND_PERCENT:
        return f"{said}: kernels act on most of the step"
    return (f"{said}: the host holds the rest, so a faster kernel shortens at most that share; a gain beyond it needs host "
            "time cut (compiled or graph-captured code, fewer host syncs and Python per step)")


def weight_bytes(evidence: dict) -> int | None:
    """The model's parameter bytes as the baseline's worker reported them (proof of work's step), or None: a token's
    roof reads them once at least (the KV cache read is on top, so a roof from them alone is a lower bound)."""
    work = evidence.get("work")
    return getattr(work, "parameter_bytes", None) or evidence.get("parameter_bytes") or None
