"""detect's answer: the stack walked under a request's root, briefed unless the caller asks for every detail."""

from __future__ import annotations

from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.detect.detect import detect
from hyperloom.tools.detect.models import DetectRequest, DetectResult, Finding, Passed
from hyperloom.tools.detect.root import system_from
from hyperloom.tools.detect.spans import spans

BRIEF_GPUS = 8
"""GPUs the default answer lists (detail lists all)."""


def run_detect(request: DetectRequest, workspace: Workspace, progress: ProgressFn | None = None) -> DetectResult:
    """The MCP and CLI entry: a request's root resolves inside the workspace; HYPERLOOM_DETECT_ROOT is the operator's."""
    root = str(workspace.resolve(request.root, kind="dir", what="root")) if request.root else None
    result = detect(system_from(root, request.timeout_s), progress)
    return result if request.detail else brief(result)


def brief(result: DetectResult) -> DetectResult:
    """The default answer: passed checks one line each, findings and GPUs without their own evidence (the result's covers
    them), at most BRIEF_GPUS GPUs listed (a machine of 64 partitions would otherwise answer 40 KB)."""
    return result.model_copy(update={
        "findings": [f.model_copy(update={"evidence": None}) for f in result.findings if f.status != "ok"],
        "passed": _passed([f for f in result.findings if f.status == "ok"]),
        "gpus": [g.model_copy(update={"evidence": None}) for g in result.gpus[:BRIEF_GPUS]],
        "more_gpus": max(0, len(result.gpus) - BRIEF_GPUS),
    })


def _passed(ok: list[Finding]) -> list[Passed]:
    """One line per passed check; a GPU's own check (nvidia's gpu_N) past the first BRIEF_GPUS folded into one line."""
    lines: list[Passed] = []
    folded: list[int] = []
    listed_gpus = 0
    for finding in ok:
        index = _gpu_check(finding)
        if index is not None and listed_gpus >= BRIEF_GPUS:
            folded.append(index)
            continue
        listed_gpus += index is not None
        lines.append(Passed(layer=finding.layer, check=finding.check, summary=finding.summary))
    if folded:
        lines.append(Passed(layer="nvidia", check=f"gpu_{spans(folded)}",
                            summary=f"GPU {spans(folded)}: {len(folded)} more, each ok (detail=true gives each one's clocks and memory)"))
    return lines


def _gpu_check(line: Finding) -> int | None:
    """The GPU index of a per-GPU check (nvidia's gpu_N), else None."""
    number = line.check.removeprefix("gpu_")
    return int(number) if line.layer == "nvidia" and line.check.startswith("gpu_") and number.isdigit() else None
