"""Measured ceilings: each microbenchmark shipped in hyperloom/kernels/microbench, run through bench."""

from __future__ import annotations

import shutil
from pathlib import Path

from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest, BenchResult
from hyperloom.tools.bench.run import backend_for, run_bench
from hyperloom.tools.roofline.models import Ceiling
from hyperloom.tools.spec.load import load_spec

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
    staged = workspace.root / ".hyperloom" / "microbench"
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
        _, variant = load_spec(shipped_microbench_dir() / name).variant(variants[backend])
        if variant.targets is None or target in variant.targets:
            names.append(name)
    return names


def measure(name: str, target: str, device: int, shape: int, max_time_s: float, staged: Path, workspace: Workspace) -> tuple[BenchResult, Ceiling | None]:
    kind, variants = MICROBENCHES[name]
    result = run_bench(
        BenchRequest(
            spec=workspace.relative(staged / name), variant=variants[backend_for(target)], shape=shape, target=target,
            device=device, adversarial=False, max_time_s=max_time_s,
        ),
        workspace,
    )
    if not result.ok:
        return result, None
    if kind in ("memory", "lds"):
        value, unit = result.bandwidth_gbps, "GB/s"
    else:
        value, unit = result.tflops, "TFLOP/s"
    return result, Ceiling(name=name, kind=kind, value=value, unit=unit, source=f"microbench {name}: {result.summary}", evidence=result.evidence)
