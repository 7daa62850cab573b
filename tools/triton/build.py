"""Ahead-of-time builds of a bound Triton kernel: a cubin (sm_XX) or hsaco (gfx) from Triton's compiler in a
worker process, cached by everything that decides it; for target host, the plan the CPU interpreter runs.

A compile error is a failed TargetBuild (with the kernel file's line), never an exception, so tune records
it as a rejected candidate; what the launch needs (kernel name, threads, dynamic shared memory, arguments
Triton specialized away, hidden scratch pointers) is kept beside the code object.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json
from hyperloom.core.toolchain import ToolInfo
from hyperloom.core.worker import run_worker
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.drivers import AMD_TARGET, HOST_TARGET, NVIDIA_TARGET
from hyperloom.tools.compile.limits import limits_of
from hyperloom.tools.compile.models import Diagnostic, KernelReport, TargetBuild
from hyperloom.tools.compile.resources import amd_kernels, nvidia_kernels
from hyperloom.tools.runtime.models import ArgSpec
from hyperloom.tools.triton.constexprs import Binding
from hyperloom.tools.triton.loader import folder_digest, triton_version, worker_env

COMPILE_TIMEOUT_S = 300.0
BUILD_FORMAT = 2  # 2: the record carries the AMD occupancy


def interpreter_tool() -> ToolInfo:
    return ToolInfo(name="triton", path=sys.executable, version=triton_version(), found_by="python package (interpreter)")


def spec_specialization(args: Sequence[ArgSpec]) -> list[dict[str, Any]]:
    """The arguments as Triton's specialization sees them: dtypes and extents of buffers, scalar values."""
    return [{"name": a.name, "kind": a.kind, "dtype": a.dtype, "nbytes": a.nbytes} if a.kind == "buffer"
            else {"name": a.name, "kind": "scalar", "dtype": a.dtype, "value": a.value} for a in args]


def _key_of_scalar(value: Any) -> Any:
    """What of a scalar's value Triton specializes on: 1, divisibility by 16, the integer width; a float's type only."""
    if isinstance(value, bool) or not isinstance(value, int):
        return type(value).__name__
    return ["int", value == 1, value % 16 == 0, -(1 << 31) <= value < (1 << 31), 0 <= value < (1 << 64)]


def build_key(source: Path, entry: str, target: str, binding: Binding, args: list[dict[str, Any]]) -> str:
    shaped = args if binding.heuristics else [  # a heuristic may read any value; otherwise only what Triton specializes on counts
        {**a, "nbytes": a["nbytes"] < (1 << 31)} if a["kind"] == "buffer" else {**a, "value": _key_of_scalar(a["value"])} for a in args]
    return sha256_json({"format": BUILD_FORMAT, "folder": folder_digest(source), "source": source.name, "entry": entry, "target": target,
                        "binding": binding.key(), "args": shaped, "triton": triton_version()})


def build_triton(source: Path, entry: str, target: str, binding: Binding, args: Sequence[ArgSpec], workspace: Workspace,
                 *, timeout_s: float = COMPILE_TIMEOUT_S) -> tuple[TargetBuild, dict[str, Any] | None]:
    """(the build, the launch record) of the kernel for `target`; host gives the interpreter's plan, no code object."""
    started = time.perf_counter()
    spec_args = spec_specialization(args)
    if target == HOST_TARGET:
        return _interpreter_plan(source, entry, binding, workspace, started)
    if not (AMD_TARGET.fullmatch(target) or NVIDIA_TARGET.fullmatch(target)):
        raise HyperloomError(f"{target!r} is not a target a Triton kernel builds for",
                             "use a gfx target (gfx942, gfx1201, …), an sm_XX, or host (the CPU interpreter)")
    key = build_key(source, entry, target, binding, spec_args)
    folder = workspace.state_dir("build", "triton", key[:24])
    record_path = folder / "record.json"
    tool = ToolInfo(name="triton", path=sys.executable, version=triton_version(), found_by="python package")
    command = ["triton.compile", workspace.relative(source), entry, target,
               json.dumps({**binding.constexprs, **binding.options}, sort_keys=True)]
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        return _result(target, tool, command, record, workspace, folder, cache_hit=True, compile_s=0.0,
                       overhead_s=time.perf_counter() - started)
    payload = {"source": str(source), "entry": entry, "target": target, "args": spec_args, "constexprs": binding.constexprs,
               "heuristics": binding.heuristics, "options": binding.options, "out": str(folder / "code")}
    t0 = time.perf_counter()
    outcome = run_worker("hyperloom.tools.triton.compile_worker:compile_payload", payload, timeout_s=timeout_s, env=worker_env())
    compile_s = time.perf_counter() - t0
    if not outcome.ok:
        failure = {"error": {"kind": "worker", "message": f"Triton's compiler worker ended: {outcome.describe()}",
                             "detail": outcome.stderr[-3000:]}}
        return _result(target, tool, command, failure, workspace, folder, cache_hit=False, compile_s=compile_s, overhead_s=0.0)
    record = outcome.result
    if "error" not in record:
        record = _checked(record, target)
    if "error" not in record or record["error"].get("kind") in ("compile", "resources"):
        write_bytes_atomic(record_path, json.dumps(record).encode())  # failures of the kernel itself are cached too
    return _result(target, tool, command, record, workspace, folder, cache_hit=False, compile_s=compile_s,
                   overhead_s=time.perf_counter() - started - compile_s)


def _checked(record: dict[str, Any], target: str) -> dict[str, Any]:
    """Refuse what the runtime cannot launch as Triton would: too much shared memory, clusters, cooperative grids."""
    limits = limits_of(target)  # Triton's own launcher refuses a kernel above the device's limit
    limit = limits.shared_bytes if limits is not None else None
    if limit is not None and record["shared"] > limit:
        return {"error": {"kind": "resources",
                          "message": f"out of resources: the kernel needs {record['shared']} bytes of shared memory, {target} has {limit}"}}
    if record["num_ctas"] != 1 or record["cooperative"]:
        return {"error": {"kind": "unsupported", "message": "the kernel launches as a thread-block cluster or a cooperative grid, which "
                                                            "Hyperloom's runtime does not"}}
    if record["hidden"] not in (0, 1, 2):
        return {"error": {"kind": "unsupported",
                          "message": f"the compiled kernel takes {record['hidden']} parameters beyond its arguments; "
                                                            "this Triton's launch ABI is not known to Hyperloom"}}
    return record


def _result(target: str, tool: ToolInfo, command: list[str], record: dict[str, Any], workspace: Workspace, folder: Path, *,
            cache_hit: bool, compile_s: float, overhead_s: float) -> tuple[TargetBuild, dict[str, Any] | None]:
    if "error" in record:
        error = record["error"]
        where = error.get("where") or ""
        summary = f"{where + ': ' if where else ''}{error.get('message', 'the Triton build failed')}"
        diagnostics = [Diagnostic(file=where.split(":")[0], line=error.get("line"), column=error.get("column"), severity="error",
                                  message=error.get("message", ""))] if error.get("line") else []
        return TargetBuild(target=target, ok=False, summary=summary, code_object=None, cache_hit=cache_hit, compiler=tool, command=command,
                           diagnostics=diagnostics, kernels=[], log=str(error.get("detail", ""))[-4000:], compile_s=round(compile_s, 6),
                           overhead_s=round(overhead_s, 6)), None
    code_object = folder / f"code{record['suffix']}"
    kernels = _resources(code_object, record)
    summary = (f"Triton {record['triton_version']} kernel {record['name']}: {record['num_warps']} warps × {record['warp_size']}, "
               f"{record['shared']} B shared"
               + (f", {kernels[0].vgprs} registers, {kernels[0].vgpr_spills or 0} spills" if kernels else ""))
    return TargetBuild(target=target, ok=True, summary=summary, code_object=workspace.relative(code_object), cache_hit=cache_hit,
                       compiler=tool,
                       command=command, diagnostics=[], kernels=kernels, log=record.get("log", "")[-4000:], compile_s=round(compile_s, 6),
                       overhead_s=round(overhead_s, 6)), record


def _resources(code_object: Path, record: dict[str, Any]) -> list[KernelReport]:
    """Resource usage as compile_kernel reports it: the AMD code object's metadata, or ptxas -v for NVIDIA.
    Triton's shared memory (LDS) is dynamic on both vendors, so the code object records none: the compiled kernel's own
    figure is the one a launch asks for. The AMD backend's occupancy (its assembly's comment: Triton's compile gives no
    remarks) comes from registers and does not count that LDS."""
    if record["suffix"] == ".hsaco":
        return [k.model_copy(update={"occupancy_waves_per_simd": k.occupancy_waves_per_simd or record.get("occupancy"),
                                     "lds_bytes": max(k.lds_bytes or 0, record["shared"])})
                for k in amd_kernels(code_object.read_bytes(), "")]
    reports = [k for k in nvidia_kernels(record.get("log", "")) if k.name == record["name"]]
    return [k.model_copy(update={"lds_bytes": max(k.lds_bytes or 0, record["shared"])}) for k in reports]


def _interpreter_plan(source: Path, entry: str, binding: Binding, workspace: Workspace, started: float) -> tuple[TargetBuild,
                                                                                                                 dict[str, Any] | None]:
    """For target host: the plan the interpreter worker runs (kernel file, entry, constexprs), as a small JSON file."""
    plan = {"format": BUILD_FORMAT, "source": str(source), "entry": entry, "constexprs": binding.constexprs,
            "heuristics": binding.heuristics, "folder": folder_digest(source)}
    key = sha256_json(plan)
    path = workspace.state_dir("build", "triton", "interpreter") / f"{source.stem}.{key[:16]}.json"
    if not path.is_file():
        write_bytes_atomic(path, json.dumps(plan, indent=1).encode())
    build = TargetBuild(target=HOST_TARGET, ok=True,
                        summary=f"{entry}: Triton interpreter plan (the kernel's math on the CPU, for the gate; no kernel timings)",
                        code_object=workspace.relative(path), cache_hit=False, compiler=interpreter_tool(),
                        command=["TRITON_INTERPRET=1", workspace.relative(source), entry], diagnostics=[], kernels=[], log="",
                        compile_s=0.0, overhead_s=round(time.perf_counter() - started, 6))
    return build, None
