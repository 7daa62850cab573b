"""The kernel's own @triton.autotune choice beside tune's winner: learned on the GPU by running the autotuner
as its author would (a worker with torch), then queued as one more candidate of the session, so it is gated
and timed exactly as every other candidate; the report puts the two side by side."""

from __future__ import annotations

import importlib.util
import json
from typing import TYPE_CHECKING

from hyperloom.core.errors import HyperloomError
from hyperloom.core.worker import run_worker
from hyperloom.core.workspace import Workspace
from hyperloom.tools.runtime.visible import VISIBLE_DEVICES, pinned_environ
from hyperloom.tools.kernelspec.load import resolved_defines
from hyperloom.tools.triton.constexprs import bind
from hyperloom.tools.triton.loader import describe_kernel, raise_for_error, worker_env
from hyperloom.tools.triton.models import AUTOTUNE_CONFIG, OPTIONS, AutotuneChoice

if TYPE_CHECKING:
    from hyperloom.tools.bench.run import Launchable
    from hyperloom.tools.tune.ledger import Ledger
    from hyperloom.tools.tune.models import TrialRecord, TuneRequest
    from hyperloom.tools.tune.session import Session

LEDGER_KEY = "triton_autotune"
NOTE = "the kernel's own @triton.autotune choice"
CHOICE_TIMEOUT_S = 900.0


def autotune_choice(launchable: Launchable, inputs_folder: object, workspace: Workspace, device: int | None) -> AutotuneChoice:
    """Which config the kernel's autotuner picks for this shape on this GPU, or why that cannot be learned here."""
    from hyperloom.tools.bench.run import arg_specs

    source, _ = launchable.loaded.source_of(launchable.variant)
    info = describe_kernel(source, launchable.variant.entry, workspace)
    if not info.autotune:
        return AutotuneChoice(determined=False, reason=f"{info.entry} has no @triton.autotune")
    if launchable.backend not in VISIBLE_DEVICES:
        return AutotuneChoice(determined=False, reason="the autotuner times configs on a GPU; this target has none")
    if importlib.util.find_spec("torch") is None:
        return AutotuneChoice(determined=False, reason="running the kernel's own autotuner needs torch (Triton's launcher takes torch tensors)")
    tuned = {k for c in info.autotune for k in c.kwargs}
    defines = {k: v for k, v in resolved_defines(launchable.variant, launchable.shape).items() if k not in tuned and k not in OPTIONS and k != AUTOTUNE_CONFIG}
    binding = bind(info, launchable.loaded.spec.args, {**defines, **{k: 0 for k in tuned}}, launchable.shape)  # the tuned ones: the autotuner's
    payload = {
        "source": str(source), "entry": launchable.variant.entry, "shape": launchable.shape,
        "grid": [str(g) for g in launchable.loaded.spec.launch_of(launchable.variant).grid],
        "args": [a.model_dump() for a in arg_specs(launchable, inputs_folder, None)],  # type: ignore[arg-type]
        "constexprs": {k: v for k, v in binding.constexprs.items() if k not in tuned},
        "configs": [{"kwargs": c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages, "num_ctas": c.num_ctas, "maxnreg": c.maxnreg}
                    for c in info.autotune],
    }
    env = pinned_environ(worker_env(), launchable.backend, device)
    outcome = run_worker("hyperloom.tools.triton.autotune_worker:choice_payload", payload, timeout_s=CHOICE_TIMEOUT_S, env=env)
    if not outcome.ok:
        return AutotuneChoice(determined=False, reason=f"the kernel's own autotuner did not finish: {outcome.describe()}")
    try:
        result = raise_for_error(outcome.result, source, launchable.variant.entry)
    except HyperloomError as exc:
        return AutotuneChoice(determined=False, reason=exc.cause)
    if result["index"] is None:
        return AutotuneChoice(determined=False, reason=f"the autotuner picked {result['config']}, which is not one of its listed configs (a prune or a pre-hook changed it)")
    return AutotuneChoice(determined=True, reason=f"Triton's autotuner on {result['device']} (its own do_bench)", config_index=result["index"],
                          config=info.autotune[result["index"]].label(), params={AUTOTUNE_CONFIG: result["index"]}, triton_ms=result["triton_ms"])


def prepare_session(session: Session, request: TuneRequest, workspace: Workspace) -> None:
    """Before the loop: refuse the interpreter (no kernel timings), then queue the kernel's own autotune choice once."""
    from hyperloom.tools.tune.devices import worker_slots
    from hyperloom.tools.tune.session import queue_candidate

    launchables = [session.launchable, *session.others.values()]
    if any(l.backend == "triton_interpreter" for l in launchables):
        raise HyperloomError("tune ranks candidates by kernel time, and on target host a Triton kernel runs in Triton's interpreter, whose times are not kernel times",
                             "tune on a GPU target (gfx…, sm_XX); on the CPU, bench --target host gates the kernel's math")
    own = session.launchable
    if session.ledger.get(LEDGER_KEY) or own.loaded.source_of(own.variant)[1] != "triton":
        return
    source, _ = own.loaded.source_of(own.variant)
    if not describe_kernel(source, own.variant.entry, workspace).autotune:
        return
    device = worker_slots(own.backend, 1, request.devices)[0]
    choice = autotune_choice(own, session.inputs("seeded"), workspace, device)
    if choice.determined:
        choice.hash = queue_candidate(session.manifest, session.ledger, dict(choice.params), NOTE).hash
    session.ledger.set(LEDGER_KEY, choice.model_dump_json())


def choice_in(ledger: Ledger, trials: list[TrialRecord]) -> AutotuneChoice | None:
    """The recorded choice with its trial's result and its ratio to the winner, for the report."""
    raw = ledger.get(LEDGER_KEY)
    if not raw:
        return None
    choice = AutotuneChoice.model_validate(json.loads(raw))
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
