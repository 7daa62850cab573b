"""Findings and their evidence: MEASURED when read live in this call, ASSUMED when replayed from a recorded root."""

from __future__ import annotations

from hyperloom.core.evidence import Evidence, assumed, measured
from hyperloom.core.hashing import combine_digests
from hyperloom.tools.detect.models import Finding, Layer, Status, Value
from hyperloom.tools.detect.root import FileRead, Output, SystemView, recorded_name


def evidence_for(
    system: SystemView,
    sources: list[Output | FileRead],
    *,
    target: str = "unspecified",
    device: str | None = None,
) -> Evidence:
    """MEASURED by hyperloom.detect for a live read; ASSUMED (naming the recording) for a replayed root."""

    digest = combine_digests([s.sha256 for s in sources])
    toolchain = {
        s.command.split()[0]: s.version for s in sources if isinstance(s, Output) and s.version
    }
    if system.replayed:
        names = ", ".join(_label(s) for s in sources) or "nothing"
        return assumed(f"recorded in {system.root}: {names}", inputs_sha256=digest, target=target, toolchain=toolchain)
    return measured("detect", inputs_sha256=digest, target=target, device=device, toolchain=toolchain)


def _label(source: Output | FileRead) -> str:
    return f"commands/{recorded_name(source.command)}" if isinstance(source, Output) else source.path.lstrip("/")


def make(
    system: SystemView,
    layer: Layer,
    check: str,
    status: Status,
    summary: str,
    *,
    sources: list[Output | FileRead],
    ground_truth: str,
    fix: str | None = None,
    details: dict[str, Value] | None = None,
    target: str = "unspecified",
) -> Finding:
    """One finding; `sources` are the reads and commands it rests on (the first names it)."""
    shown = "; ".join(s.command if isinstance(s, Output) else s.path for s in sources) or "none"
    return Finding(
        layer=layer,
        check=check,
        status=status,
        summary=summary,
        details=details or {},
        source=shown,
        ground_truth=ground_truth,
        fix=fix if status != "ok" else None,
        evidence=evidence_for(system, sources, target=target),
    )
