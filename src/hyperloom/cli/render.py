"""Plain-text rendering of results for people; `--json` prints the models instead."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hyperloom.core.figures import significant

if TYPE_CHECKING:
    from hyperloom.core.evidence import Evidence
    from hyperloom.tools.bench.models import BenchResult
    from hyperloom.tools.compile.models import CompileResult
    from hyperloom.tools.detect.models import DetectResult
    from hyperloom.tools.gate.models import CaseVerdict, FreezeResult, GateResult
    from hyperloom.tools.isa.models import AuditResult, CensusResult, ProbeResult
    from hyperloom.tools.roofline.models import RooflineResult
    from hyperloom.tools.verify.models import VerifyResult


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Columns padded to their widest cell. With `width`, the last column is wrapped (and breaks at newlines in
    a cell) so that every line fits in `width` characters, continuation lines aligned under it."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *cells)]
    if width is not None and cells:
        lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
        room = max(width - lead, 24)
        wrapped = [row[:-1] + ["\n".join(_wrap(row[-1], room))] for row in cells]
        widths[-1] = max(len(line) for row in wrapped for line in [headers[-1], *row[-1].split("\n")])
        cells = wrapped
    line = "  ".join("{:<%d}" % w for w in widths)
    out = [line.format(*headers), line.format(*("-" * w for w in widths))]
    for row in cells:
        first, *rest = row[-1].split("\n")
        out.append(line.format(*row[:-1], first))
        out.extend(line.format(*([""] * (len(row) - 1)), more) for more in rest)
    return "\n".join(text.rstrip() for text in out)


def _wrap(text: str, room: int) -> list[str]:
    return [piece for part in text.split("\n") for piece in (textwrap.wrap(part, room, break_long_words=False, break_on_hyphens=False) or [""])]


def report_width() -> int:
    """The terminal's width when there is one (or $COLUMNS), else 100 characters."""
    return shutil.get_terminal_size((100, 24)).columns


def _num(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _value(value: float | int | str) -> str:
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def evidence_line(evidence: Evidence) -> str:
    return (
        f"{evidence.tag.value} by {evidence.source} on {evidence.device}, target {evidence.target}, "
        f"at {evidence.at.isoformat(timespec='seconds')}, inputs sha256 {evidence.inputs_sha256[:16]}…"
    )


def _not_compared(case: CaseVerdict) -> str | None:
    """Why a case's elements were never compared (its shapes or dtypes differ), else None."""
    if case.candidate_shape != case.reference_shape:
        return "shapes differ"
    if case.candidate_dtype != case.reference_dtype and case.elements == 0 and not case.passed:
        return "dtypes differ"
    return None


def gate_report(result: GateResult) -> str:
    rows = [
        (case.name, "FAIL", why, "-", "-", "-", "-", "-") if (why := _not_compared(case)) else (
            case.name,
            "PASS" if case.passed else "FAIL",
            f"{case.mismatches}/{case.elements}",
            _num(case.max_abs_error),
            _num(case.max_rel_error),
            _num(case.max_ulp),
            f"{case.nan_count.candidate}/{case.nan_count.reference}",
            f"{case.inf_count.candidate}/{case.inf_count.reference}",
        )
        for case in result.cases
    ]
    parts = [
        table(["case", "verdict", "mismatches", "max abs", "max rel", "max ulp", "NaN c/r", "Inf c/r"], rows),
        "",
    ]
    for case in result.cases:
        if case.passed:
            continue
        parts.append(f"{case.name}: {case.reason}")
        for row in case.first_mismatches:
            extra = f"  abs {_num(row.abs_error)}" if row.abs_error is not None else ""
            extra += f"  ulp {row.ulp}" if row.ulp is not None else ""
            parts.append(f"  at {row.index}: candidate {_value(row.candidate)}  reference {_value(row.reference)}{extra}")
    tol = result.tolerance
    parts += [
        f"tolerance: atol={tol.atol:g} rtol={tol.rtol:g} max_ulp={tol.max_ulp} nan_policy={tol.nan_policy}"
        + (f" (frozen in {result.reference_set})" if result.reference_set else ""),
        f"evidence: {evidence_line(result.evidence)}",
        result.summary,
    ]
    return "\n".join(parts)


def freeze_report(result: FreezeResult) -> str:
    tol = result.tolerance
    return "\n".join(
        [
            f"froze {len(result.cases)} reference(s) into {result.reference_set}: {', '.join(result.cases)}",
            f"tolerance: atol={tol.atol:g} rtol={tol.rtol:g} max_ulp={tol.max_ulp} nan_policy={tol.nan_policy}",
            f"manifest sha256: {result.manifest_sha256}",
            f"evidence: {evidence_line(result.evidence)}",
        ]
    )


def compile_report(result: CompileResult) -> str:
    parts = []
    for build in result.builds:
        status = "ok" if build.ok else "FAILED"
        origin = "cache hit" if build.cache_hit else f"{build.compiler.name} {build.compiler.version or ''}".strip()
        parts.append(f"{build.target}: {status} ({origin}, compile {build.compile_s:.3f} s, overhead {build.overhead_s * 1e3:.1f} ms)")
        if build.code_object:
            parts.append(f"  code object: {build.code_object}")
        if build.kernels:
            rows = [
                (k.name, _num(k.vgprs), _num(k.agprs), _num(k.sgprs), _num(k.vgpr_spills), _num(k.lds_bytes),
                 _num(k.scratch_bytes), _num(k.wavefront_size), _num(k.occupancy_waves_per_simd))
                for k in build.kernels
            ]
            header = ["kernel", "VGPR", "AGPR", "SGPR", "spills", "LDS B", "scratch B", "wave", "occupancy"]
            parts.append("\n".join("  " + line for line in table(header, rows).splitlines()))
        for d in build.diagnostics:
            where = f"{d.file}:{d.line}:{d.column}: " if d.line else ""
            parts.append(f"  {where}{d.severity}: {d.message}")
        if not build.ok:
            parts.append(f"  {build.summary}")
    parts.append(f"evidence: {evidence_line(result.evidence)}")
    parts.append(result.summary)
    return "\n".join(parts)


def verify_report(result: VerifyResult) -> str:
    parts = [f"{result.code_object} ({', '.join(result.targets)})"]
    for kernel in result.kernels:
        top = ", ".join(f"{c.mnemonic} {c.count}" for c in kernel.histogram[:8])
        parts.append(f"  {kernel.name}: {kernel.instructions} instructions; top: {top}")
    rows = [
        (v.kernel, v.kind, v.rule, "PASS" if v.passed else "FAIL", str(v.found), v.requirement, ", ".join(v.matched[:3]))
        for v in result.verdicts
    ]
    if rows:
        parts += ["", table(["kernel", "kind", "rule", "verdict", "found", "requires", "matched"], rows)]
    for v in result.verdicts:
        if v.note and (not v.passed or v.kind != "spills"):
            parts.append(f"  {v.kernel} / {v.rule}: {v.note}")
        if not v.passed:
            parts.extend(f"    {line}" for line in v.lines)
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)


def detect_report(result: DetectResult, width: int | None = None) -> str:
    """The layers bottom-up, one row per finding (its fix on a line of its own, wrapped to the terminal's width),
    then the GPUs with their datasheet peaks tagged ASSUMED."""
    rows = [(f.layer, f.status.upper(), f.check, f.summary + (f"\n→ fix: {f.fix}" if f.fix else "")) for f in result.findings]
    from hyperloom.tools.detect.models import LAYERS

    rows += [(p.layer, "OK", p.check, p.summary) for p in result.passed]
    rows.sort(key=lambda row: LAYERS.index(row[0]))  # stable: bottom-up, as detect orders its checks
    parts = [table(["layer", "status", "check", "finding"], rows, width=width or report_width()), ""]
    parts.append("layers: " + ", ".join(f"{layer} {status}" for layer, status in result.layers.items()))
    for gpu in result.gpus:
        shape = ", ".join(
            f"{label} {value}" for label, value in (
                ("CUs/SMs", gpu.compute_units), ("wave", gpu.wave_size), ("LDS KiB", gpu.lds_kib),
                ("VRAM GiB", f"{gpu.vram_bytes / 2**30:.1f}" if gpu.vram_bytes else None), ("cc", gpu.compute_capability),
            ) if value is not None
        )
        parts.append(f"GPU {gpu.index}: {gpu.name} [{gpu.target or '?'}] {shape}".rstrip())
        if gpu.part_compute_units:
            parts.append(f"  note: this node holds {gpu.compute_units} of the {gpu.part}'s {gpu.part_compute_units} CUs (a partition); peaks are the whole part's")
        if (p := result.parts.get(gpu.part or "")) is not None:
            parts.append(
                f"  peaks (ASSUMED, {p.source}): FP32 {p.fp32_tflops:g} TFLOP/s, FP16 {p.fp16_tflops:g} TFLOP/s, "
                f"{p.memory_gb:g} GB at {p.memory_bandwidth_gbps:g} GB/s"
            )
    if result.more_gpus:
        parts.append(f"... and {result.more_gpus} more GPU(s) like these (--detail lists every one)")
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)


def bench_report(result: BenchResult) -> str:
    parts = [f"{result.name}/{result.variant} on {result.device or result.target} ({result.backend}), shape {result.shape}"]
    for v in result.gate:
        parts.append(f"  gate {v.input_set}: {'PASS' if v.passed else 'FAIL'}  {v.summary}")
    rows = []
    for label, s in (("kernel", result.kernel), ("wall", result.wall)):
        if s is not None:
            rows.append((label, f"{s.median_s * 1e6:.3f}", f"{s.min_s * 1e6:.3f}", f"{s.p10_s * 1e6:.3f}", f"{s.p90_s * 1e6:.3f}",
                         f"{s.cv:.2%}", f"{s.median_ci95_rel:.2%}", str(s.n), str(s.outliers)))
    if rows:
        parts += ["", table(["time (us)", "median", "min", "p10", "p90", "CV", "CI95", "n", "outliers"], rows)]
    if result.bandwidth_gbps is not None:
        parts.append(f"bandwidth: {significant(result.bandwidth_gbps)} GB/s ({result.bytes_moved:,} bytes per launch)")
    if result.tflops is not None:
        parts.append(f"compute: {significant(result.tflops)} TFLOP/s ({result.flops:,} ops per launch)")
    if result.kernel_to_wall is not None:
        parts.append(f"kernel/wall: {result.kernel_to_wall:.3f}; cache flushed with {result.flush_bytes / 2**20:.0f} MiB (cache {result.cache_bytes / 2**20:.0f} MiB)")
    for label, state in (("before", result.state_before), ("after", result.state_after)):
        if state is not None:
            parts.append(f"{label}: SM {_num(state.sm_clock_mhz)} MHz, memory {_num(state.memory_clock_mhz)} MHz, {_num(state.power_w)} W, {_num(state.temperature_c)} C {state.note}".rstrip())
    if result.artifacts:
        parts.append(f"artifacts: {result.artifacts}")
    parts += [f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)


def roofline_report(result: RooflineResult) -> str:
    rows = [(c.name, c.kind, f"{c.value:.4g} {c.unit}", c.evidence.tag.value, c.source[:70]) for c in (*result.measured, *result.datasheet)]
    parts = [table(["ceiling", "kind", "value", "tag", "source"], rows)]
    if result.placements:
        placed = [
            (p.name, _num(p.arithmetic_intensity), _num(p.achieved_gbps), _num(p.achieved_tflops), f"{p.percent_of_roof:.1f} %", p.bound, p.roof,
             _num(p.same_size_read_gbps), "-" if p.percent_of_same_size_read is None else f"{p.percent_of_same_size_read:.1f} %")
            for p in result.placements
        ]
        header = ["kernel", "flop/byte", "GB/s", "TFLOP/s", "of roof", "bound", "roof", "same-size read GB/s", "of it"]
        parts += ["", table(header, placed)]
    parts += [f"files: {', '.join(result.files)}", f"evidence: {evidence_line(result.evidence)}", result.summary]
    return "\n".join(parts)


CENSUS_LISTING_HINT = "List instructions with --detail, or --match dot8 (any part of a name); page with --offset N and --limit N."


def census_report(result: CensusResult) -> str:
    from hyperloom.tools.isa.summary import LISTING_HINT

    summary = result.summary.removesuffix(LISTING_HINT) + CENSUS_LISTING_HINT if result.summary.endswith(LISTING_HINT) else result.summary
    parts = [summary, ""]
    if result.capabilities_present or result.capabilities_absent:  # a page of a listing leaves them to the summary answer
        rows = [(c.name, f"{', '.join(c.proof)}{' …' if c.proof_count > len(c.proof) else ''}") for c in result.capabilities_present]
        parts += [table(["capability", "proved by"], rows), "", f"absent: {', '.join(result.capabilities_absent) or 'none'}", ""]
    if result.instructions:
        rows = [(i.name, i.kind, ",".join(i.families), i.example or "", i.encoding or "", _flag(i.reassembles)) for i in result.instructions]
        parts += [table(["instruction", "kind", "families", "example", "encoding", "re-assembles"], rows), ""]
    if result.compare is not None:
        cmp = result.compare
        parts += [
            f"only in {result.target} ({cmp.only_in_target_count}): {' '.join(cmp.only_in_target)}",
            f"only in {cmp.other} ({cmp.only_in_other_count}): {' '.join(cmp.only_in_other)}",
            f"renamed ({cmp.renamed_count}, {result.target} = {cmp.other}): {' '.join(f'{a}={b}' for a, b in cmp.renamed)}",
            "",
        ]
    if result.next_offset is not None:
        parts.append(f"more: --offset {result.next_offset}")
    parts += [f"evidence: {evidence_line(result.evidence)}{' (from the cache)' if result.from_cache else ''}", result.version_note]
    return "\n".join(parts)


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def probe_report(result: ProbeResult) -> str:
    rows = [
        (line.line, "accepted" if line.accepted else line.error_class or "", line.printed or line.message or "", line.encoding or "")
        for line in result.lines
    ]
    return "\n".join([table(["line", "verdict", "printed / message", "encoding"], rows), "", result.summary, f"evidence: {evidence_line(result.evidence)}"])


def audit_report(result: AuditResult) -> str:
    rows = [
        (c.name, "used" if c.used else "UNUSED", ", ".join(c.used_instructions or c.available), ", ".join(c.kernels))
        for c in result.capabilities
    ]
    parts = [table(["capability", "verdict", "instructions (used, or available)", "kernels"], rows), ""]
    parts += [f"skipped: {item}" for item in result.skipped]
    if result.not_in_census:
        parts.append(f"in the code objects but not in the census: {', '.join(result.not_in_census)}")
    parts += [result.summary, f"evidence: {evidence_line(result.evidence)}"]
    return "\n".join(parts)
