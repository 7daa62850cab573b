"""compile_kernel as its fronts call it: a source built for every target asked for, in parallel when there are several."""

from __future__ import annotations

import os

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.executors import pool_or_inline
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.build import build_target
from hyperloom.tools.compile.drivers import plan_target
from hyperloom.tools.compile.models import CompileRequest, CompileResult, TargetBuild


def compile_kernel(request: CompileRequest, workspace: Workspace, progress: ProgressFn | None = None) -> CompileResult:
    source = workspace.resolve(request.source, kind="file", what="source")
    if not source.is_file():
        raise HyperloomError(f"{request.source!r} is not a file", "pass the kernel source file")
    includes = [workspace.resolve(d, kind="dir", what="include_dirs") for d in request.include_dirs]
    if bad := [d for d, p in zip(request.include_dirs, includes) if not p.is_dir()]:
        raise HyperloomError(f"include_dirs {bad} are not folders", "pass folders inside the workspace")
    out_dir = workspace.resolve(request.output_dir, must_exist=False, kind="dir", what="output_dir")
    plans = [plan_target(request, source, target, includes) for target in dict.fromkeys(request.targets)]

    builds: list[TargetBuild] = []
    # one target (a tune candidate): no thread
    with pool_or_inline(len(plans) > 1, min(len(plans), os.cpu_count() or 1), "compile") as pool:
        for build in pool.map(lambda plan: build_target(plan, request, source, workspace, out_dir), plans):
            builds.append(build)
            if progress is not None:
                progress(len(builds), len(plans))
    failed = [b.target for b in builds if not b.ok]
    summary = (
        f"built {source.name} for {', '.join(b.target for b in builds)}"
        if not failed
        else "; ".join(f"{b.target}: {b.summary}" for b in builds if not b.ok)
    )
    evidence = measured(
        "compile_kernel",
        inputs_sha256=combine_digests([sha256_file(source), sha256_json(request.model_dump())]),
        target=",".join(b.target for b in builds),
        toolchain={b.compiler.name: b.compiler.version or "unknown" for b in builds},
    )
    return CompileResult(ok=not failed, summary=summary, builds=builds, evidence=evidence)
