"""allreduce_int6 against the backend's native bf16 all-reduce, size by size, on real ranks.

Timed: one all-reduce on rank 0, from a barrier and device sync to the result's sync, median over `repeats`; not timed:
making the input, the native copy it reduces in place, the fp32 all-reduce used as the error reference."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import sha256_json
from hyperloom.tools.allreduce.launch import check_backend, run_ranks
from hyperloom.tools.allreduce.models import AllreduceBenchRequest, AllreduceBenchResult, AllreduceBenchRow

MIB = 1 << 20


def sizes_bytes(min_mib: int, max_mib: int) -> list[int]:
    """min_mib, 4·min_mib, … up to max_mib, in bytes."""
    sizes, size = [], min_mib
    while size <= max_mib:
        sizes.append(size * MIB)
        size *= 4
    return sizes


def run_allreduce_bench(request: AllreduceBenchRequest) -> AllreduceBenchResult:
    """Time allreduce_int6 against the backend's native bf16 all-reduce at each size (MEASURED, rank 0's median)."""
    device_kind = check_backend(request.backend, request.ranks)
    job = {"mode": "bench", "backend": request.backend, "timeout_s": request.timeout_s,
           **request.model_dump(include={"repeats", "warmup", "block", "partial_sums", "codec"}),
           "sizes": sizes_bytes(request.min_mib, request.max_mib)}
    with tempfile.TemporaryDirectory(prefix="hyperloom-allreduce-bench-") as tmp:
        report = run_ranks(job, request.ranks, Path(tmp), request.timeout_s)[0]
    device = report["device"] if device_kind == "cuda" else host_device()
    rows = [AllreduceBenchRow(**row) for row in report["rows"]]
    evidence = measured(
        "allreduce_int6", inputs_sha256=sha256_json(request.model_dump()), device=f"{request.ranks} {request.backend} ranks on {device}",
        toolchain={"torch": report["torch"]},
    )
    return AllreduceBenchResult(
        summary=f"{len(rows) // 2} sizes, {request.ranks} {request.backend} ranks on {device}: int6 ({report['codec']}) "
                "against native bf16",
        ranks=request.ranks, backend=request.backend, device=device, codec=report["codec"], rows=rows, evidence=evidence,
    )


def bench_rank(job: dict[str, Any], rank: int, device: Any) -> dict[str, Any]:
    """One rank's part of the sweep (runs inside a worker); rank 0's timings are the ones reported."""
    import torch
    import torch.distributed as dist

    from hyperloom.tools.allreduce.distributed import allreduce_int6
    from hyperloom.tools.allreduce.reference import Scheme

    scheme = Scheme(block=job["block"], partial_sums=job["partial_sums"])

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def timed(call: Any, prepare: Any) -> tuple[float, Any]:
        for _ in range(job["warmup"]):
            call(prepare())
        times = []
        for _ in range(job["repeats"]):
            argument = prepare()
            dist.barrier()
            sync()
            start = time.perf_counter()
            out = call(argument)
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times), out

    def native(y: Any) -> Any:
        dist.all_reduce(y)
        return y

    rows, codec = [], "not run"
    for size in job["sizes"]:
        generator = torch.Generator().manual_seed(size + rank)
        x = torch.randn(size // 2, generator=generator).to(torch.bfloat16).to(device)
        exact = x.float()
        dist.all_reduce(exact)
        peak = max(float(exact.abs().max()), 1e-30)
        int6_s, outcome = timed(lambda t: allreduce_int6(t, scheme, codec_mode=job["codec"]), lambda x=x: x)
        native_s, summed = timed(native, x.clone)
        for method, elapsed, result, sent in (
            ("int6", int6_s, outcome.result, outcome.wire_bytes), ("native_bf16", native_s, summed, None),
        ):
            rows.append({
                "size_bytes": size, "method": method, "time_s": elapsed, "algbw_gbps": size / elapsed / 1e9,
                "max_rel_error": float((result.float() - exact).abs().max()) / peak, "wire_bytes_per_rank": sent,
            })
        codec = outcome.codec
        del x, exact, outcome, summed
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {"rows": rows, "device": name, "torch": torch.__version__, "codec": codec}
