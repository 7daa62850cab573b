"""correctness_gate as its fronts call it: a request's candidates, references and tolerance made into cases, then judged."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.check import Case, judge
from hyperloom.tools.gate.freeze import load_reference_set
from hyperloom.tools.gate.models import ArrayRef, GateRequest, GateResult, Tolerance
from hyperloom.tools.gate.sources import ArraySource, NpyFile, inline_array


def run_gate(request: GateRequest, workspace: Workspace, progress: ProgressFn | None = None) -> GateResult:
    """Check every case; the overall verdict passes only if every case passes."""
    tolerance, cases, set_label = _prepare(request, workspace)
    return judge(cases, tolerance, keep=request.max_reported_mismatches, reference_set=set_label, target=request.target, progress=progress)


def _prepare(request: GateRequest, workspace: Workspace) -> tuple[Tolerance, list[Case], str | None]:
    if request.reference_set is not None:
        declared = [n for n in ("atol", "rtol", "max_ulp", "nan_policy") if getattr(request, n) is not None]
        if declared or request.references is not None:
            raise HyperloomError(
                "reference_set declares its own references and tolerance, but "
                f"{', '.join(declared + (['references'] if request.references is not None else []))} were also given",
                "drop those arguments to use the frozen tolerance, or freeze a new reference set with the tolerance you want",
            )
        frozen = load_reference_set(workspace.resolve(request.reference_set, kind="dir", what="reference_set"), workspace)
        references: list[ArrayRef] = [workspace.relative(path) for path in frozen.reference_paths]
        known = frozen.reference_sha256
        tolerance, names = frozen.tolerance, request.case_names or frozen.case_names
        set_label = workspace.relative(frozen.folder)
    else:
        if request.references is None:
            raise HyperloomError("no references were given", "pass references (one per candidate) or a frozen reference_set")
        if request.atol is None or request.rtol is None:
            raise HyperloomError(
                "the tolerance is not declared: atol and rtol are required",
                "declare atol and rtol before comparing (e.g. atol=1e-3, rtol=1e-3 for fp16 outputs; 0 and 0 for bit-exact)",
            )
        references = request.references
        tolerance = Tolerance(
            atol=request.atol, rtol=request.rtol, max_ulp=request.max_ulp, nan_policy=request.nan_policy or "forbid"
        )
        names, set_label, known = request.case_names, None, {}
    if len(references) != len(request.candidates):
        raise HyperloomError(
            f"{len(request.candidates)} candidates but {len(references)} references",
            "give one reference per candidate, in the same order",
        )
    names = names or [f"case{i}" for i in range(len(references))]
    if len(names) != len(references):
        raise HyperloomError(f"{len(names)} case names for {len(references)} cases", "give one name per case, or none")
    cases = [
        Case(name, *_sources(cand, ref, f"candidate {name}", f"reference {name}", request, workspace, known))
        for name, cand, ref in zip(names, request.candidates, references, strict=True)
    ]
    return tolerance, cases, set_label


def _sources(
    candidate: ArrayRef, reference: ArrayRef, cand_label: str, ref_label: str, request: GateRequest, workspace: Workspace,
    known: dict[Path, str],
) -> tuple[ArraySource, ArraySource]:
    files = {
        label: NpyFile.open(path := workspace.resolve(ref, suffix=".npy", kind="file"), f"{label} ({ref})", known.get(path))
        for label, ref in ((cand_label, candidate), (ref_label, reference))
        if isinstance(ref, str)
    }

    def build(label: str, ref: ArrayRef, other: str) -> ArraySource:
        if label in files:
            return files[label]
        dtype = request.inline_dtype or (files[other].dtype.newbyteorder("=") if other in files else "float64")
        return inline_array(ref, np.dtype(dtype), f"{label} (inline)")

    return build(cand_label, candidate, ref_label), build(ref_label, reference, cand_label)
