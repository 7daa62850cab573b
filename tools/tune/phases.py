"""breakdown.json's `run`: candidates per hour, the phase sums over the session's trials, each device's share."""

from __future__ import annotations

from typing import Any

from hyperloom.tools.pipeline.phases import DIGITS, PHASES


def run_summary(trials: list[Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """breakdown.json's `run`: candidates per hour over the loops' wall time, phase sums, each device's share of work,
    and what the worker processes cost; from the trials (TrialRecord) and the loop's runs (ledger meta `runs`)."""
    wall_s = sum(r.get("loop_wall_s", 0.0) for r in runs)
    timed = [t for t in trials if t.phases_s]
    totals = {phase: round(sum(t.phases_s.get(phase, 0.0) for t in timed), DIGITS) for phase in PHASES}
    devices: dict[str, dict[str, Any]] = {}
    for t in trials:
        entry = devices.setdefault(_label(t),
                                   {"device": _label(t), "device_index": t.device_index, "candidates": 0, "passed": 0, "busy_s": 0.0})
        entry["candidates"] += 1
        entry["passed"] += t.status == "PASSED"
        entry["busy_s"] = round(entry["busy_s"] + t.device_s, DIGITS)
    for entry in devices.values():
        entry["busy_share"] = round(entry["busy_s"] / wall_s, 4) if wall_s > 0 else None
    last = runs[-1] if runs else {}
    return {
        "worker_mode": last.get("worker_mode"), "compile_ahead": last.get("compile_ahead"), "slots": last.get("slots", []),
        "loop_wall_s": round(wall_s, DIGITS), "candidates": sum(r.get("candidates", 0) for r in runs),
        "candidates_per_hour": round(sum(r.get("candidates", 0) for r in runs) / wall_s * 3600, 1) if wall_s > 0 else None,
        "phases_s": totals, "phases_per_candidate_s": {p: round(v / len(timed), DIGITS) for p, v in totals.items()} if timed else {},
        "devices": sorted(devices.values(), key=lambda d: d["device"]),
        "workers": [r.get("workers", {}) for r in runs],
    }


def _label(trial: Any) -> str:
    """A trial's device: its GPU, a CPU worker, or the compiler for a candidate rejected before any device ran it."""
    if trial.worker < 0:
        return "compiler"
    return "cpu" if trial.device_index is None else f"gpu {trial.device_index}"
