"""One target's build of a source: cached by its content and steps, with diagnostics and resource usage."""

from __future__ import annotations

import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.hashing import combine_digests, sha256_file
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile import cache
from hyperloom.tools.compile.diagnostics import failure_summary, parse_diagnostics
from hyperloom.tools.compile.drivers import Plan, prelude_dir
from hyperloom.tools.compile.models import CompileRequest, Diagnostic, KernelReport, TargetBuild
from hyperloom.tools.compile.resources import amd_kernels, nvidia_kernels

COMPILE_TIMEOUT_S = 300.0
LOG_CHARS = 4000


@lru_cache(maxsize=1)
def _prelude_digest() -> str:
    files = sorted(p for p in prelude_dir("").rglob("*") if p.is_file())
    return combine_digests(f"{p.relative_to(prelude_dir(''))}:{sha256_file(p)}" for p in files)


def _key(plan: Plan, source: Path) -> str:
    return cache.build_key(
        {
            "source": sha256_file(source),
            "target": plan.target,
            "steps": [[step.tool.path, step.tool.version, *step.args] for step in plan.steps],
            "prelude": _prelude_digest(),
            **plan.key_material,
        }
    )


def _output_path(out_dir: Path, source: Path, plan: Plan, key: str) -> Path:
    return out_dir / f"{source.stem}.{plan.target.replace(':', '_')}.{key[:12]}{plan.suffix}"


def build_target(plan: Plan, request: CompileRequest, source: Path, workspace: Workspace, out_dir: Path) -> TargetBuild:
    """One target's build: the cached code object copied out, or the plan's steps run, their log parsed and the result cached."""
    started = time.perf_counter()
    key = _key(plan, source)
    output = _output_path(out_dir, source, plan, key)
    if request.use_cache and (entry := cache.lookup(key)):
        data = entry.code_object.read_bytes()
        if not _holds(output, data):  # a hit copied before (a tune session's candidate again) is not written and synced again
            write_bytes_atomic(output, data)
        record = entry.record
        return _result(plan, record, workspace.relative(output), True, 0.0, time.perf_counter() - started, request)

    compile_s, log, failure = 0.0, "", None
    with tempfile.TemporaryDirectory(prefix="hyperloom-build-") as tmp:
        names = {"{out}": f"{tmp}/code{plan.suffix}", "{obj}": f"{tmp}/code.o", "{dep}": f"{tmp}/code.d"}
        command: list[str] = []
        for step in plan.steps:
            argv = [step.tool.path or step.tool.name, *(names.get(a, a) for a in step.args)]
            command += (["&&"] if command else []) + argv
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False, errors="replace")
            except subprocess.TimeoutExpired:
                failure = f"{step.tool.name} did not finish within {COMPILE_TIMEOUT_S:g} s"
                break
            finally:
                compile_s += time.perf_counter() - t0
            log += proc.stdout + proc.stderr
            if proc.returncode != 0:
                failure = ""
                break
        diagnostics = [_relative(d, workspace) for d in parse_diagnostics(log)]
        if failure is not None:
            record = {"ok": False, "summary": failure or failure_summary(diagnostics, plan.target, log), "command": command,
                      "diagnostics": [d.model_dump() for d in diagnostics], "kernels": [], "log": log[-LOG_CHARS:]}
            return _result(plan, record, None, False, compile_s, time.perf_counter() - started - compile_s, request)
        built = Path(names["{out}"])
        kernels = {".cubin": lambda: nvidia_kernels(log), ".hsaco": lambda: amd_kernels(built.read_bytes(), log)}.get(plan.suffix, list)()
        depfile = Path(names["{dep}"])
        prerequisites = cache.parse_depfile(depfile.read_text()) if plan.depfile and depfile.is_file() else [source]
        record = {
            "ok": True, "summary": "", "command": command, "diagnostics": [d.model_dump() for d in diagnostics],
            "kernels": [k.model_dump() for k in kernels], "log": log[-LOG_CHARS:],
            "dependencies": cache.tracked_dependencies(prerequisites, [workspace.root, prelude_dir("").resolve()]),
        }
        write_bytes_atomic(output, built.read_bytes())
        if request.use_cache:
            cache.store(key, built, record)
    return _result(plan, record, workspace.relative(output), False, compile_s, time.perf_counter() - started - compile_s, request)


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at `path` has exactly these bytes (its size is checked first)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _result(
    plan: Plan, record: dict, code_object: str | None, hit: bool, compile_s: float, overhead_s: float, request: CompileRequest
) -> TargetBuild:
    kernels = [KernelReport(**k) for k in record["kernels"]]
    ok, summary = record["ok"], record["summary"]
    listed = plan.suffix != ".so"  # host libraries carry no kernel metadata to check names against
    if ok and listed and request.kernels and (missing := [k for k in request.kernels if k not in {r.name for r in kernels}]):
        ok = False
        summary = (f"kernels {missing} are not in the code object (it has {sorted(r.name for r in kernels)}); check the names "
                   "and extern \"C\"")
    if ok and not summary and not listed:
        entries = f" for {', '.join(request.kernels)}" if request.kernels else ""
        summary = (f"host library {code_object}{entries} built for the CPU (a host build has no GPU kernel metadata: no registers, spills "
                   "or occupancy)")
    elif ok and not summary:
        summary = f"{len(kernels)} kernel(s): " + ", ".join(f"{k.name} ({k.vgprs} VGPRs, {k.vgpr_spills or 0} spills)" for k in kernels)
    return TargetBuild(
        target=plan.target, ok=ok, summary=summary, code_object=code_object if ok else None, cache_hit=hit,
        compiler=plan.compiler, command=record["command"], diagnostics=record["diagnostics"], kernels=kernels,
        log=record["log"], compile_s=round(compile_s, 6), overhead_s=round(max(overhead_s, 0.0), 6),
    )


def _relative(diagnostic: Diagnostic, workspace: Workspace) -> Diagnostic:
    """Diagnostics name workspace files relative to its root, as callers named them."""
    if diagnostic.file and Path(diagnostic.file).is_absolute():
        return diagnostic.model_copy(update={"file": workspace.relative(Path(diagnostic.file))})
    return diagnostic
