"""correctness_gate's verdict: cases of open arrays compared with their references, chunk by chunk, under a tolerance."""

from __future__ import annotations

import os
from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np

from hyperloom.core.evidence import measured
from hyperloom.core.executors import pool_or_inline
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.gate.compare import ChunkStats, MismatchRow, compare_chunk
from hyperloom.tools.gate.models import CaseVerdict, GateResult, Mismatch, SideCounts, Tolerance
from hyperloom.tools.gate.sources import ArraySource, NpyFile, in_memory_copy

CHUNK_ELEMENTS = 1 << 16  # 256 KiB of float32 per side: the temporaries stay in cache
INLINE_ELEMENTS = 4 * CHUNK_ELEMENTS  # cases this small in all are compared in the caller's thread


@dataclass(frozen=True)
class Case:
    name: str
    candidate: ArraySource
    reference: ArraySource


def judge(
    cases: list[Case], tolerance: Tolerance, *, keep: int, reference_set: str | None, target: str | None,
    progress: ProgressFn | None = None,
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
