"""One target's census: sweep (canonical set) ∪ probe (aliases), self-checked, cached by
(llvm-mc sha256, target, definitions). The measurement itself is in measure.py."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from pydantic import ValidationError

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.hashing import sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.isa.digest import STEPS, definitions_digest, step
from hyperloom.tools.isa.models import Census
from hyperloom.tools.isa.targets import LlvmMc, check_target, find_llvm_mc, generation

log = logging.getLogger(__name__)


def _cache_path(llvm: LlvmMc, target: str, gen: str) -> Path:
    key = sha256_json([llvm.sha256, target, definitions_digest(gen)])
    return cache_dir("isa") / f"{target}-{key[:32]}.json"


def census(
    target: str,
    *,
    refresh: bool = False,
    llvm: LlvmMc | None = None,
    parallel: bool = True,
    progress: ProgressFn | None = None,
) -> tuple[Census, bool]:
    """The census of `target` and whether it came from the cache; measured (and cached) when absent.

    `parallel` splits the sweep over one llvm-mc process per CPU.
    """
    llvm = llvm or find_llvm_mc()
    # A cached census was measured by this very binary for this target: no need to ask llvm-mc again.
    if not refresh and (gen := generation(target)) is not None:
        path = _cache_path(llvm, target, gen)
        if path.is_file():
            try:
                cached = Census.model_validate_json(path.read_bytes())
                step(progress, STEPS)
                return cached, True
            except (ValidationError, OSError) as exc:
                log.warning("ignoring the unreadable census cache %s: %s", path, exc)
    from hyperloom.tools.isa.measure import measure  # the sweep's modules: imported on a cache miss only

    gen = check_target(target, llvm)
    path = _cache_path(llvm, target, gen)
    if parallel:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="sweep") as pool:
            fresh = measure(target, llvm, gen, pool, progress)
    else:
        fresh = measure(target, llvm, gen, None, progress)
    write_bytes_atomic(path, fresh.model_dump_json().encode())
    return fresh, False


def census_many(targets: list[str], *, refresh: bool = False, progress: ProgressFn | None = None) -> list[Census]:
    """Several targets side by side (one llvm-mc process per target at a time), in the order given."""
    llvm = find_llvm_mc()
    for target in targets:
        check_target(target, llvm)  # refuse a bad list before measuring anything
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="census") as pool:
        futures = {pool.submit(census, t, refresh=refresh, llvm=llvm, parallel=False): t for t in targets}
        for done, future in enumerate(as_completed(futures), start=1):
            future.result()
            if progress is not None:
                progress(done, len(targets))
        return [future.result()[0] for future in futures]
