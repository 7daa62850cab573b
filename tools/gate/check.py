"""correctness_gate: compare candidate outputs with references under a declared tolerance."""

from __future__ import annotations

import os
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.executors import pool_or_inline
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.compare import ChunkStats, MismatchRow, compare_chunk
from hyperloom.tools.gate.freeze import load_reference_set
from hyperloom.tools.gate.models import ArrayRef, CaseVerdict, GateRequest, GateResult, Mismatch, SideCounts, Tolerance
from hyperloom.tools.gate.sources import ArraySource, NpyFile, in_memory_copy, inline_array

CHUNK_ELEMENTS = 1 << 16  # 256 KiB of float32 per side: the temporaries stay in cache
INLINE_ELEMENTS = 4 * CHUNK_ELEMENTS  # cases this small in all are compared in the caller's thread


@dataclass(frozen=True)
class Case:
    name: str
    candidate: ArraySource
    reference: ArraySource


def run_gate(request: GateRequest, workspace: Workspace, progress: ProgressFn | None = None) -> GateResult:
    """Check every case; the overall verdict passes only if every case passes."""
    tolerance, cases, set_label = _prepare(request, workspace)
    return judge(cases, tolerance, keep=request.max_reported_mismatches, reference_set=set_label, target=request.target, progress=progress)


def judge(
    cases: list[Case], tolerance: Tolerance, *, keep: int, reference_set: str | None, target: str | None, progress: ProgressFn | None = None,
) -> GateResult:
    """The verdict on cases whose arrays are open already (files, or arrays in memory: a GPU worker's outputs, tools/gate/outputs.py)."""
    total = sum(max(case.candidate.size, 1) for case in cases)
    done = 0
    verdicts: list[CaseVerdict] = []
    with pool_or_inline(total > INLINE_ELEMENTS, max(2, os.cpu_count() or 1), "gate") as pool:
        for case in cases:
            verdicts.append(_check_case(case, tolerance, keep, pool))
            done += max(case.candidate.size, 1)
            if progress is not None:
                progress(done, total)
    digests = [d for v in verdicts for d in (v.candidate_sha256, v.reference_sha256)]
    evidence = measured(
        "correctness_gate",
        inputs_sha256=combine_digests([*digests, sha256_json(tolerance.model_dump())]),
        target=target or "unspecified",
        toolchain={"numpy": np.__version__},
    )
    failed = [v.name for v in verdicts if not v.passed]
    summary = (
        f"PASS: {len(verdicts)}/{len(verdicts)} cases within atol={tolerance.atol:g}, rtol={tolerance.rtol:g}"
        + (f", max_ulp={tolerance.max_ulp}" if tolerance.max_ulp is not None else "")
        if not failed
        else f"FAIL: {len(failed)}/{len(verdicts)} cases out of tolerance ({', '.join(failed[:5])}{'…' if len(failed) > 5 else ''})"
    )
    return GateResult(
        passed=not failed, summary=summary, tolerance=tolerance, reference_set=reference_set, cases=verdicts, evidence=evidence
    )


# ---------------------------------------------------------------- request → cases


def _prepare(request: GateRequest, workspace: Workspace) -> tuple[Tolerance, list[Case], str | None]:
    if request.reference_set is not None:
        declared = [n for n in ("atol", "rtol", "max_ulp", "nan_policy") if getattr(request, n) is not None]
        if declared or request.references is not None:
            raise HyperloomError(
                f"reference_set declares its own references and tolerance, but {', '.join(declared + (['references'] if request.references is not None else []))} were also given",
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


# ---------------------------------------------------------------- one case


def _check_case(case: Case, tolerance: Tolerance, keep: int, pool: Executor) -> CaseVerdict:
    cand, ref = case.candidate, case.reference
    hashes: tuple[Future[str], Future[str]] = (pool.submit(cand.sha256), pool.submit(ref.sha256))
    reason = None
    if cand.shape != ref.shape:
        reason = f"shape mismatch: candidate {list(cand.shape)} vs reference {list(ref.shape)}"
    elif cand.dtype.newbyteorder("=") != ref.dtype.newbyteorder("="):
        reason = (
            f"dtype mismatch: candidate {cand.dtype.name} vs reference {ref.dtype.name}; "
            "produce the reference's dtype, or compare after an explicit cast"
        )
    compared = 0 if reason else cand.size
    stats = ChunkStats()
    if compared:
        if cand.fortran_order != ref.fortran_order:  # storage orders differ: bring both to C order
            cand, ref = (in_memory_copy(s) if isinstance(s, NpyFile) and s.fortran_order else s for s in (cand, ref))
        chunks = [
            pool.submit(_compare_range, cand, ref, tolerance, start, min(CHUNK_ELEMENTS, compared - start), keep)
            for start in range(0, compared, CHUNK_ELEMENTS)
        ]
        for chunk in chunks:
            stats = stats.merge(chunk.result(), keep)
        if stats.mismatches:
            reason = f"{stats.mismatches} of {compared} elements out of tolerance"
    order = "F" if cand.fortran_order and ref.fortran_order else "C"
    return CaseVerdict(
        name=case.name,
        passed=reason is None,
        reason=reason,
        candidate_shape=list(cand.shape),
        reference_shape=list(ref.shape),
        candidate_dtype=cand.dtype.name,
        reference_dtype=ref.dtype.name,
        elements=compared,
        mismatches=stats.mismatches,
        mismatch_fraction=stats.mismatches / compared if compared else 0.0,
        max_abs_error=stats.max_abs if stats.finite_pairs else None,
        max_rel_error=stats.max_rel if stats.has_rel else None,
        max_ulp=stats.max_ulp if stats.ulp_pairs else None,
        nan_count=SideCounts(candidate=stats.nan_candidate, reference=stats.nan_reference),
        inf_count=SideCounts(candidate=stats.inf_candidate, reference=stats.inf_reference),
        first_mismatches=[_mismatch(row, cand.shape, order) for row in stats.first],
        candidate_sha256=hashes[0].result(),
        reference_sha256=hashes[1].result(),
    )


def _compare_range(
    cand: ArraySource, ref: ArraySource, tolerance: Tolerance, start: int, count: int, keep: int
) -> ChunkStats:
    return compare_chunk(cand.read(start, count), ref.read(start, count), tolerance, start, keep)


def _json_scalar(value: int | float) -> int | float | str:
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _mismatch(row: MismatchRow, shape: tuple[int, ...], order: str) -> Mismatch:
    index = [int(i) for i in np.unravel_index(row.flat_index, shape, order=order)] if shape else []
    return Mismatch(
        index=index,
        candidate=_json_scalar(row.candidate),
        reference=_json_scalar(row.reference),
        abs_error=row.abs_error,
        ulp=row.ulp,
    )
