"""Report of compile_kernel: one block per target, one row per kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperloom.cli.render.text import evidence_line, num, table

if TYPE_CHECKING:
    from hyperloom.tools.compile.models import CompileResult


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
                (k.name, num(k.vgprs), num(k.agprs), num(k.sgprs), num(k.vgpr_spills), num(k.lds_bytes),
                 num(k.scratch_bytes), num(k.wavefront_size), num(k.occupancy_waves_per_simd))
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
