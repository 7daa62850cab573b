"""allreduce_int6: the function behind the MCP tool, the CLI and the Python API."""

from __future__ import annotations

import io
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.allreduce.inputs import RankInputs, rank_inputs
from hyperloom.tools.allreduce.launch import check_backend, run_ranks
from hyperloom.tools.allreduce.models import AllreduceRequest, AllreduceResult
from hyperloom.tools.allreduce.quantize import block_count, padded_length
from hyperloom.tools.allreduce.reference import Scheme, reference_allreduce
from hyperloom.tools.allreduce.stats import error_stats, precision_note, stored_results, wire_stats


def run_allreduce(request: AllreduceRequest, workspace: Workspace, progress: ProgressFn | None = None) -> AllreduceResult:
    """All-reduce the ranks' inputs with 6-bit codes; write the result, return statistics."""
    out = workspace.resolve(request.out, must_exist=False, suffix=".npy", kind="file", what="out")
    inputs = rank_inputs(request, workspace)
    scheme = Scheme(block=request.block, rounding=request.rounding, seed=request.seed, partial_sums=request.partial_sums)
    ranks = len(inputs.values)
    steps = 3 if request.backend != "numpy" else 2
    toolchain = {"numpy": np.__version__}
    device = host_device()
    distributed = None
    if request.backend != "numpy":
        distributed = _run_torch(request, inputs, scheme)
        toolchain["torch"] = distributed["torch"]
        device = f"{request.backend} ranks on {distributed['device']}" if distributed["device"] != "cpu" else (f"{request.backend} "
                                                                                                               f"ranks on {device}")
        _tick(progress, 1, steps)

    start = time.perf_counter()
    outcome = reference_allreduce(inputs.values, scheme)
    elapsed_s = time.perf_counter() - start
    stored = stored_results(outcome, inputs.kind, inputs.shape)
    _tick(progress, steps - 1, steps)
    matches = None
    if distributed is not None:
        matches = all(r.tobytes() == stored[0].tobytes() for r in distributed["results"])
        stored, elapsed_s = distributed["results"], distributed["elapsed_s"]
        outcome = replace(outcome, wire_bytes=distributed["wire_bytes"])  # the bytes the real ranks counted

    errors = error_stats(inputs.values, stored, inputs.kind, outcome, request.rounding, request.block)
    buffer = io.BytesIO()
    np.save(buffer, stored[0], allow_pickle=False)
    write_bytes_atomic(out, buffer.getvalue())
    _tick(progress, steps, steps)

    elements = inputs.values[0].size
    padded = padded_length(elements, ranks)
    nonzero = sum(int(np.count_nonzero(v)) for v in inputs.values)
    wire = wire_stats(elements, padded, request.block, outcome)
    params = {k: v for k, v in request.model_dump().items() if k not in ("inputs", "out", "timeout_s", "target")}
    evidence = measured(
        "allreduce_int6",
        inputs_sha256=combine_digests([*inputs.digests, sha256_json(params)]),
        target=request.target or "unspecified",
        device=device,
        toolchain=toolchain,
    )
    verdict = "within" if errors.within_bound else "OUTSIDE"
    summary = (
        f"{ranks} rank(s) × {elements} {inputs.kind}: max abs error {errors.max_abs_error:.3g} {verdict} the analytic bound "
        f"{errors.error_bound_abs:.3g}; cross-rank drift {errors.cross_rank_drift:g}; {wire.compression_vs_fp16:.2f}x smaller "
        f"than fp16 (scales counted)"
        + (f"; {'matches' if matches else 'DIFFERS FROM'} the numpy reference bit for bit" if matches is not None else "")
    )
    return AllreduceResult(
        summary=summary,
        out=workspace.relative(out),
        backend=request.backend,
        ranks=ranks,
        shape=list(inputs.shape),
        dtype=inputs.kind,
        elements=elements,
        block=request.block,
        blocks=block_count(padded, request.block),
        rounding=request.rounding,
        partial_sums=request.partial_sums,
        code_bound=outcome.q_max,
        **asdict(errors),
        nonzero_inputs=nonzero,
        inputs_quantized_to_zero=outcome.quantized_to_zero,
        precision_note=precision_note(nonzero, outcome.quantized_to_zero, inputs.values, request.block),
        codec=distributed["codec"] if distributed is not None else None,
        matches_reference=matches,
        wire=wire,
        elapsed_s=elapsed_s,
        evidence=evidence,
    )


def _tick(progress: ProgressFn | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _run_torch(request: AllreduceRequest, inputs: RankInputs, scheme: Scheme) -> dict:
    """Every rank in its own process over torch.distributed; returns their results and figures."""
    ranks = len(inputs.stored)
    check_backend(request.backend, ranks)
    with tempfile.TemporaryDirectory(prefix="hyperloom-allreduce-") as tmp:
        folder = Path(tmp)
        paths = []
        for rank, array in enumerate(inputs.stored):
            paths.append(str(folder / f"input{rank}.npy"))
            np.save(paths[-1], array, allow_pickle=False)
        job = {"mode": "run", "backend": request.backend, "inputs": paths, "kind": inputs.kind,
               "scheme": asdict(scheme), "timeout_s": request.timeout_s, "codec": request.codec}
        reports = run_ranks(job, ranks, folder, request.timeout_s)
        results = [np.load(folder / f"rank{rank}.npy", allow_pickle=False) for rank in range(ranks)]
    if any(r.shape != inputs.shape for r in results):
        raise RuntimeError(f"a rank returned shape {[list(r.shape) for r in results]} for inputs of shape {list(inputs.shape)}")
    return {
        "results": results,
        "wire_bytes": [r["wire_bytes"] for r in reports],
        "elapsed_s": reports[0]["elapsed_s"],
        "torch": reports[0]["torch"],
        "device": reports[0]["device"],
        "codec": reports[0]["codec"],
    }

