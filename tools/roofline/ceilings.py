"""Measured ceilings: each microbenchmark shipped in hyperloom/kernels/microbench, run through bench."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest, BenchResult
from hyperloom.tools.pipeline.launch import backend_for
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.roofline.models import Ceiling
from hyperloom.tools.runtime.models import FlushMode
from hyperloom.tools.kernelspec.load import load_spec

# microbenchmark → (kind, variant per backend)
MICROBENCHES: dict[str, tuple[str, dict[str, str]]] = {
    "copy": ("memory", {"cuda": "gpu", "hip": "gpu", "c": "host"}),
    "read": ("memory", {"cuda": "gpu", "hip": "gpu", "c": "host"}),
    "write": ("memory", {"cuda": "gpu", "hip": "gpu"}),
    "fma": ("compute", {"cuda": "gpu", "hip": "gpu", "c": "host"}),
    "mma_f16": ("compute", {"cuda": "nvidia"}),
    "mma_i8": ("compute", {"cuda": "nvidia"}),
    "matrix_f16": ("compute", {"hip": "gpu"}),
    "matrix_i8": ("compute", {"hip": "gpu"}),
    "matrix_i4": ("compute", {"hip": "gpu"}),
    "lds": ("lds", {"cuda": "gpu", "hip": "gpu"}),
}


def shipped_microbench_dir() -> Path:
    return shipped_kernels("microbench")


def stage(workspace: Workspace) -> Path:
    """Copy the shipped microbenchmarks into the workspace, where bench may read them."""
    staged = workspace.state_dir("microbench")
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(shipped_microbench_dir(), staged)
    return staged


def available(target: str) -> list[str]:
    """The microbenchmarks with a variant for this target's backend that the spec lets build for it."""
    backend = backend_for(target)
    names = []
    for name, (_, variants) in MICROBENCHES.items():
        if backend not in variants:
            continue
        _, variant = load_spec(shipped_microbench_dir() / name, Workspace.at(shipped_microbench_dir())).variant(variants[backend])
        if variant.targets is None or target in variant.targets:
            names.append(name)
    return names


HOST_MEMORY_FLOATS = 1 << 25  # a host memory buffer: 128 MiB, beyond a core's last-level cache
HOST_FULL_S = 60.0  # what `roofline --target host` should take on a small CPU


def sized_shape(name: str, target: str, full: bool, staged: Path) -> int:
    """The shape index `name` is measured at. A GPU's, and a 'small' run's, as asked (0 small, 1 full). A 'full' run on
    the host sized to fit HOST_FULL_S on a 2-core CPU: the memory microbenchmarks over HOST_MEMORY_FLOATS a buffer (a shape
    appended to the staged spec; the shipped 1 GiB ones took 149 s and 31 s there, mostly making and checking their
    inputs) and the compute one at its small shape (a core's FMA rate does not grow with the work; the shipped full
    shape's 141 GFLOP ran past the 120 s trial limit)."""
    if target != "host" or not full:
        return 1 if full else 0
    if MICROBENCHES[name][0] != "memory":
        return 0
    spec_path = staged / name / "kernel.yaml"
    doc = yaml.safe_load(spec_path.read_text())
    doc["shapes"].append({**doc["shapes"][-1], "n": HOST_MEMORY_FLOATS})
    write_bytes_atomic(spec_path, yaml.safe_dump(doc, sort_keys=False).encode())
    return len(doc["shapes"]) - 1


SAME_SIZE_PER_THREAD = 2  # float4s a thread in a same-size read: the fastest measured (docs/decisions.md: The roofline's same-size read)


def read_of_size(bytes_read: int, target: str, device: int, flush: tuple[bool, FlushMode], max_time_s: float, staged: Path,
                 workspace: Workspace) -> BenchResult:
    """The read microbenchmark over `bytes_read` bytes (whole float4s) on `target`, flushed as `flush` says (flush_cache,
    flush_mode): a shape appended to the staged read spec, run with SAME_SIZE_PER_THREAD loads a thread, all in flight at
    once. The roof a kernel that moves that many bytes can reach, launch, first DRAM round trip and tail included."""
    spec_path = staged / "read" / "kernel.yaml"
    doc = yaml.safe_load(spec_path.read_text())
    doc["shapes"].append({"n": max(4, bytes_read // 16 * 4), "per_thread": SAME_SIZE_PER_THREAD})
    write_bytes_atomic(spec_path, yaml.safe_dump(doc, sort_keys=False).encode())
    variant = MICROBENCHES["read"][1][backend_for(target)]
    return run_bench(
        BenchRequest(
            spec=workspace.relative(staged / "read"), variant=variant, shape=len(doc["shapes"]) - 1, target=target, device=device,
            params={} if variant == "host" else {"UNROLL": SAME_SIZE_PER_THREAD}, adversarial=False, max_time_s=max_time_s,
            flush_cache=flush[0], flush_mode=flush[1],
        ),
        workspace, measuring_roof=True,
    )


def measure(name: str, target: str, device: int, shape: int, max_time_s: float, staged: Path,
            workspace: Workspace) -> tuple[BenchResult, Ceiling | None]:
    kind, variants = MICROBENCHES[name]
    result = run_bench(
        BenchRequest(
            spec=workspace.relative(staged / name), variant=variants[backend_for(target)], shape=shape, target=target,
            device=device, adversarial=False, max_time_s=max_time_s,
        ),
        workspace, measuring_roof=True,
    )
    if not result.ok:
        return result, None
    if kind in ("memory", "lds"):
        value, unit = result.bandwidth_gbps, "GB/s"
    else:
        value, unit = result.tflops, "TFLOP/s"
    return result, Ceiling(name=name, kind=kind, value=value, unit=unit, source=f"microbench {name}: {result.summary}",
                           evidence=result.evidence)
