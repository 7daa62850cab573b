"""report.md: the profile for people, every figure with its unit and every roof with its tag."""

from __future__ import annotations

from hyperloom.tools.profile.classify import short_name
from hyperloom.tools.profile.models import ProfileResult

NAME_CHARS = 90


def _short(text: str, limit: int = NAME_CHARS) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.4g}"


def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers), *("| " + " | ".join(row) + " |" for row in rows), ""]


def _library(result: ProfileResult) -> list[str]:
    """Each fusion candidate the library covers, its arguments traced to the chain; and why near misses were refused."""
    lines = []
    for i, c in enumerate(result.fusion, start=1):
        if c.library is not None:
            m = c.library
            shape = ", ".join(f"{k}={v}" for k, v in m.shape.items())
            lines.append(f"- #{i} is `{m.kernel}` ({m.pattern}): spec `{m.spec_folder}` at {shape}, {m.dtype}; launcher `{m.launcher}`")
            for a in m.args:
                what = f"{a.dims} {a.dtype}" if a.dims is not None else f"= {a.value:g}"
                lines.append(f"  - `{a.name}` {what} ({a.tag.value}): {a.source}")
            lines += [f"  - note: {n}" for n in m.notes]
        elif c.library_note:
            lines.append(f"- #{i}: {c.library_note}")
    return ["Fusion library:", "", *lines, ""] if lines else []


def _replays(result: ProfileResult) -> list[str]:
    """One replay of the step's graph (a decode token) split into its parts, and its kernels by time."""
    r = result.replays
    if r is None:
        return []
    parts = [("the graph's kernels", r.graph_busy_us), ("gaps inside the graph", r.graph_gaps_us),
             (f"kernels outside the graph ({r.outside_kernels_per_period:g} a period)", r.outside_kernels_us),
             ("device idle between replays", r.idle_us)]
    lines = [f"## One replay of the graph ({r.replays} replays, {r.kernels_per_replay} kernels each)", ""]
    lines += _table(["part", "us a replay", "% of the period"],
                    [[name, f"{us:.1f}", f"{100 * us / r.period_us:.1f}"] for name, us in parts])
    if r.roof is not None and r.roof_percent is not None:
        lines += [f"Period {r.period_us:.1f} us; roof {r.roof.roof_us():.1f} us ({r.roof.describe()}): {r.roof_percent:.1f} % of the roof.",
                  ""]
    lines += _table(["kernel in the graph", "us a replay", "calls", "% of the period"],
                    [[_short(k.name), f"{k.us:.1f}", f"{k.count:g}", f"{100 * k.share_of_period:.1f}"] for k in r.kernels])
    return lines


def render(result: ProfileResult) -> str:
    e = result.evidence
    lines = [
        f"# Profile: {result.device}", "",
        result.summary, "",
        f"- trace: `{result.trace}` ({result.tool})",
        f"- evidence: {e.tag.value} by {e.source} on {e.device}, at {e.at.isoformat(timespec='seconds')}",
        f"- window {result.window_s * 1e3:.4g} ms; device time {result.device_time_s * 1e3:.4g} ms in {result.kernel_count} activities",
    ]
    if result.busy_percent is not None:
        lines.append(f"- busiest GPU busy {result.busy_percent:.1f} %, idle {result.idle_percent:.1f} "
                     f"%{' (launch-bound)' if result.launch_bound else ''}")
    if result.profiler_device_time_s is not None:
        gap = (100 * (result.device_time_s - result.profiler_device_time_s) / result.profiler_device_time_s if result.profiler_device_time_s
               else 0.0)
        lines.append(f"- torch.profiler key_averages device total {result.profiler_device_time_s * 1e3:.4g} ms; the kernels here sum to "
                     f"{result.device_time_s * 1e3:.4g} ms ({gap:+.2f} %)")
    if result.step_wall_s:
        lines.append(f"- recorded steps' wall time (s): {', '.join(f'{s:.4g}' for s in result.step_wall_s)}")
    lines.append("")
    if result.findings:
        lines += ["## Findings", "", *(f"- {f}" for f in result.findings), ""]
    lines += _replays(result)
    lines += ["## Time by class", ""]
    lines += _table(["class", "count", "time (ms)", "% of device time"],
                    [[c.kernel_class, str(c.count), f"{c.total_s * 1e3:.4g}", f"{c.percent_of_device_time:.1f}"] for c in result.classes])
    lines += [f"## Top kernels ({len(result.kernels)} of {result.kernel_groups})", ""]
    lines += _table(["kernel", "class", "count", "total (ms)", "%", "mean (us)", "launch", "op"],
                    [[_short(short_name(k.name)), k.kernel_class, str(k.count), f"{k.total_s * 1e3:.4g}", f"{k.percent_of_device_time:.1f}",
                      _us(k.mean_s), _short(k.launch_shapes[0], 40) if k.launch_shapes else "-", ", ".join(k.ops[:2]) or "-"]
                     for k in result.kernels])
    lines += ["## Hotspots (time x headroom to the roof)", ""]
    lines += _table(["#", "op or kernel", "class", "calls", "total (ms)", "%", "GB/s", "TFLOP/s", "% of roof", "roof", "headroom (ms)"],
                    [[str(h.rank), _short(h.label if h.op else short_name(h.label)), h.kernel_class, str(h.calls), f"{h.total_s * 1e3:.4g}",
                      f"{h.percent_of_device_time:.1f}", _num(h.achieved_gbps), _num(h.achieved_tflops), _num(h.percent_of_roof),
                      f"{h.roof} ({h.roof_tag.value})" if h.roof and h.roof_tag else "-",
                      _num(h.headroom_s * 1e3 if h.headroom_s is not None else None)] for h in result.hotspots])
    models: dict[str, list[str]] = {}
    for h in result.hotspots:
        models.setdefault(h.work_model, []).append(f"#{h.rank}")
    lines += ["How each was counted:", "", *(f"- {', '.join(ranks)}: {model}" for model, ranks in models.items()), ""]
    lines += ["## Fusion candidates", ""]
    if result.fusion:
        lines += _table(["#", "chain", "before → after", "times", "kernels each", "time (ms)", "bytes saved each", "saved in all",
                         "est. time saved (ms)", "library kernel"],
                        [[str(i), _short(" → ".join(c.ops), 120) + (f" (over {', '.join(c.steps_over)})" if c.steps_over else ""),
                          f"{c.before or '-'} → {c.after or '-'}", str(c.occurrences), str(c.kernels_per_occurrence),
                          f"{c.time_s * 1e3:.4g}", _bytes(c.bytes_saved_per_occurrence), _bytes(c.bytes_saved_total),
                          f"{c.estimated_time_saved_s * 1e3:.3g}", f"`{c.library.kernel}`" if c.library else "-"]
                         for i, c in enumerate(result.fusion, start=1)])
        lines += _library(result)
    else:
        lines += ["None found: no two memory-bound ops back to back over the same tensors (or no shapes in the trace).", ""]
    if result.handoff:
        lines += ["## Hand-off drafts (kernel specs)", "", "Run spec_check on each; a draft with TODOs lists them (a kernel to write).", ""]
        for h in result.handoff:
            what = f"hotspot #{h.rank}" if h.kind == "hotspot" else f"fusion #{', #'.join(map(str, h.ranks or [h.rank]))}"
            uses = f"the library's `{h.library}`" if h.library else f"TODO: {'; '.join(h.todos)}"
            lines.append(f"- {what} `{_short(h.label, 100)}` → `{h.spec}` ({h.dtype}, {len(h.shapes)} shape(s)): {uses}")
        lines.append("")
    lines += ["## Roofs", "", f"Source: {result.roof_source}", ""]
    if result.roofs:
        lines += _table(["ceiling", "value", "tag"], [[c.name, f"{c.value:.4g} {c.unit}", c.evidence.tag.value] for c in result.roofs])
    lines += ["## Files", "", *(f"- `{f}`" for f in result.files), ""]
    return "\n".join(lines)
