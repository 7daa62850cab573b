"""What workload_bench leaves in the session folder: result.json (validators/workload_bench.schema.json), report.md,
and speedup.png (each candidate's speedup with its 95 % interval; matplotlib, when installed)."""

from __future__ import annotations

from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.ab import same_work_note
from hyperloom.tools.workload.models import CandidateResult, WorkloadBenchResult
from hyperloom.tools.workload.plot import NO_PLOT, Bar, can_plot, speedup_bars
from hyperloom.tools.workload.work import describe


def write_report(result: WorkloadBenchResult, benches: Path, workspace: Workspace) -> WorkloadBenchResult:
    """The bench's files in a folder of its own under `benches` (1/, 2/, ...: an earlier bench's verdicts are kept), and
    the list of every bench there (index.md, newest last); the result names its own folder's files."""
    folder = _own_folder(benches)
    plot = _plot(result, folder / "speedup.png")
    warnings = result.warnings + ([NO_PLOT] if result.candidates and not can_plot() else [])
    result = result.model_copy(update={"report_md": workspace.relative(folder / "report.md"),
                                       "result_json": workspace.relative(folder / "result.json"),
                                       "plot": workspace.relative(plot) if plot else None, "warnings": warnings})
    write_bytes_atomic(folder / "result.json", result.model_dump_json(indent=2).encode() + b"\n")
    write_bytes_atomic(folder / "report.md", markdown(result).encode())
    write_bytes_atomic(benches / INDEX, index(benches).encode())
    return result


INDEX = "index.md"


def _own_folder(benches: Path) -> Path:
    """The next numbered folder under `benches`, made here (a bench running beside this one takes the one after)."""
    benches.mkdir(parents=True, exist_ok=True)
    number = max((int(p.name) for p in benches.iterdir() if p.name.isdigit()), default=0) + 1
    while True:
        try:
            (benches / str(number)).mkdir()
            return benches / str(number)
        except FileExistsError:
            number += 1


def index(benches: Path) -> str:
    """Every bench of the session under `benches`, oldest first: when, its candidates' verdicts, its summary, its report."""
    lines = ["# Benches of this workload", "", "Each `workload bench` keeps its own folder; the newest is last.", "",
             "| # | at (UTC) | candidates | summary | report |", "|---|---|---|---|---|"]
    for folder in sorted((p for p in benches.iterdir() if p.name.isdigit() and (p / "result.json").is_file()), key=lambda p: int(p.name)):
        try:
            kept = WorkloadBenchResult.model_validate_json((folder / "result.json").read_bytes())
        except ValueError:
            lines.append(f"| {folder.name} | - | - | result.json unreadable | [{folder.name}/report.md]({folder.name}/report.md) |")
            continue
        verdicts = ", ".join(f"{' + '.join(c.levers)} {c.verdict}" for c in kept.candidates) or "-"
        lines.append(f"| {folder.name} | {kept.evidence.at:%Y-%m-%d %H:%M:%S} | {cell(verdicts)} | {cell(kept.summary)} | "
                     f"[{folder.name}/report.md]({folder.name}/report.md) |")
    return "\n".join(lines) + "\n"


def cell(text: str) -> str:
    """Text as one markdown table cell, whole: pipes escaped, lines joined."""
    return " ".join(text.replace("|", "/").split())


def markdown(result: WorkloadBenchResult) -> str:
    e = result.evidence
    lines = [f"# Workload {result.name}: end to end", "",
             f"{e.tag.value} by {e.source} on {e.device} ({result.vendor}), {e.at:%Y-%m-%d %H:%M} UTC; "
             + ", ".join(f"{k} {v}" for k, v in e.toolchain.items()) + f"; inputs sha256 {e.inputs_sha256[:16]}.", "", result.summary, ""]
    if result.baseline is not None:
        b = result.baseline
        device = f", device {result.baseline_device_step_s * 1e3:.3g} ms" if result.baseline_device_step_s else ""
        inputs = (f"; inputs(seed) {result.baseline_inputs_step_s * 1e3:.3g} ms a step, outside it"
                  if result.baseline_inputs_step_s is not None else "")
        lines += [f"Baseline: {b.median_s * 1e3:.4g} ms per step (median of {b.n} legs, 95 % CI ±{b.median_ci95_rel:.1%}{device}). A "
                  f"step's figure: its timed window ({result.figure}: step() and outputs(){inputs}; the outputs' host copy after it).", ""]
    fresh = result.same_work.inputs_fresh if result.same_work is not None else None  # the baseline's, as every trial's
    if fresh is not None:
        lines += [("Inputs: fresh for every timed step (inputs(seed), seeds drawn by the controller after each candidate was built; both "
                   "legs of a pair on the same seeds, the candidate's outputs gated against the baseline's)." if fresh else
                   "Inputs fixed: memoization not excluded (the workload has no inputs(seed)): a candidate could return what it computed "
                   "before."), ""]
    if result.same_work is not None and result.noise_band is not None:
        lines += ["Same work (A/A): "
                  f"{same_work_note(result.same_work, result.noise_band, result.baseline.median_s if result.baseline else None)}.", ""]
    if result.baseline_work is not None:
        lines += [f"Baseline step's work (one profiled step, MEASURED): {describe(result.baseline_work)}.", ""]
    if result.roof is not None:
        lines += [f"Roof: {result.roof.note}; source: {result.roof.source}. A candidate timed under it is IMPOSSIBLE.", ""]
    if result.candidates:
        lines += ["| candidate | verdict | speedup | 95 % interval | faster pairs | sign p | gate s (share) | why |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in result.candidates:
            ci = f"{c.speedup_ci95[0]:.3g}-{c.speedup_ci95[1]:.3g}" if c.speedup_ci95 else "-"
            pairs = f"{c.candidate_faster}/{c.pairs}" if c.pairs else "-"
            p = f"{c.sign_test_p:.3f}" if c.sign_test_p is not None else "-"
            lines.append(f"| {' + '.join(c.levers)} | {c.verdict} | {f'{c.speedup:.3g}x' if c.speedup else '-'} | {ci} | {pairs} | {p} | "
                         f"{_gate(c)} | {cell(c.reason)} |")
        lines.append("")
        shares = [share for c in result.candidates if c.pairs and (share := gate_share(c)) is not None]
        if shares:
            lines += [f"Gate cost: the controller spent {max(shares):.0%} at most, {sum(shares) / len(shares):.0%} on average, of a timed "
                      "candidate's trial (build, warm-up, judging, both workers' legs) judging it: outputs compared, continuation scored, "
                      "the proof-of-work profile taken and read (target <= 15 %).", ""]
        for c in result.candidates:
            if c.engagement:
                lines.append(f"- {' + '.join(c.levers)}: "
                             + "; ".join(f"{g.lever} {'engaged' if g.engaged else 'NOT engaged'} ({g.evidence})" for g in c.engagement))
    lines += [""] + [f"Warning: {w}" for w in result.warnings]
    return "\n".join(lines).rstrip() + "\n"


def gate_share(c: CandidateResult) -> float | None:
    """The share of a candidate's trial (the device time it cost, the controller's clock) spent judging."""
    return c.gate_s / c.trial_s if c.gate_s is not None and c.trial_s else None


def _gate(c: CandidateResult) -> str:
    share = gate_share(c)
    return "-" if c.gate_s is None else f"{c.gate_s:.3g}" + (f" ({share:.0%})" if share is not None else "")


def _plot(result: WorkloadBenchResult, path: Path) -> Path | None:
    bars = [Bar(" + ".join(c.levers), c.speedup, c.speedup_ci95, "tab:green" if c.verdict == "FASTER" else "tab:gray")
            for c in result.candidates if c.speedup]
    return speedup_bars(bars, f"{result.name}: end to end, {result.evidence.device}",
                        "speedup over the baseline (per-pair ratios' median, 95 % interval)", path)
