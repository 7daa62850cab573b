"""integrate: put a kernel into a frozen workload, inside its worker, without editing installed packages, and let the
workload's own gate and A/B decide KEEP or REVERT.

An overrides module is written in the session folder (`integrate/<kernel>-<digest>/overrides.py`): it loads the
kernel's launcher and replaces the named method (a module's `forward`, e.g. HF's `Qwen2RMSNorm.forward`) with an
adapter calling it (through a torch custom op where the model is compiled: tools/workload/adapters.py), through
tools/workload/overrides.py's `replace`, which counts the calls. workload_bench then runs the candidate
`[*with_levers, overrides:FILE]` beside the baseline: the frozen outputs gate it (a wrong kernel: REVERT with the
first mismatches), its calls are counted in a profiled step (none: NOT_ENGAGED, before any speed is believed), the
wrapper's own cost per call is measured beside the bare call, and the A/B decides (FASTER: KEEP; else REVERT with the
reason). The overrides module is what to apply to reproduce the result.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.workload.adapters import ADAPTERS, overrides_source
from hyperloom.tools.workload.bench import bench_workload
from hyperloom.tools.workload.gate.frozen import read_frozen
from hyperloom.tools.workload.models import CandidateResult, IntegrateRequest, IntegrateResult, IntegrateVerdict, WorkloadBenchRequest

TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*$")


def integrate(request: IntegrateRequest, workspace: Workspace, progress: ProgressFn | None = None) -> IntegrateResult:
    frozen = read_frozen(request.name, workspace)
    name, launcher, overrides = write_overrides(frozen.folder, request.kernel, request.replace, dict(request.params), request.adapter,
                                                workspace)
    candidate = [*request.with_levers, f"overrides:{workspace.relative(overrides)}"]
    bench = bench_workload(WorkloadBenchRequest(name=request.name, candidates=[candidate], pairs=request.pairs,
                                                steps_per_leg=request.steps_per_leg, timeout_s=request.timeout_s,
                                                max_baseline_legs=10), workspace, progress)
    result = bench.candidates[0]
    verdict, summary = _verdict(result, name, request.replace)
    calls, share, wrapper_us = _engagement_figures(result)
    evidence = measured("integrate", device=bench.evidence.device, target=bench.vendor, toolchain=bench.evidence.toolchain,
                        inputs_sha256=combine_digests([bench.evidence.inputs_sha256, sha256_file(launcher), sha256_file(overrides)]))
    return IntegrateResult(ok=True, verdict=verdict, summary=summary, kernel=name, replace=request.replace, params=dict(request.params),
                           overrides=workspace.relative(overrides), calls_per_step=calls, wrapper_us_per_call=wrapper_us,
                           wrapper_share=share, kernel_sha256=sha256_file(launcher), bench=bench, evidence=evidence)


def write_overrides(session: Path, kernel: str, replace: str, params: dict[str, str | int], adapter: str | None,
                    workspace: Workspace) -> tuple[str, Path, Path]:
    """The overrides module putting `kernel` in place of `replace`, written once per content in the session folder:
    (the kernel's name, its launcher file, the module). Also what optimize proposes from a profile's hand-offs."""
    if not TARGET.match(replace):
        raise HyperloomError(f"replace {replace[:80]!r} is not module:Class.method",
                             "give e.g. transformers.models.qwen2.modeling_qwen2:Qwen2RMSNorm.forward")
    name, launcher, shipped = _launcher(kernel, workspace)
    adapter = adapter or name
    if adapter not in ADAPTERS:
        raise HyperloomError(f"no adapter puts {adapter} in place of a method (adapters: {', '.join(ADAPTERS)})",
                             "write an overrides module yourself (tools/workload/overrides.py's replace) and time it with workload bench, "
                             "lever overrides:FILE.py")
    digest = sha256_json([name, adapter, replace, params, sha256_file(launcher)])[:12]
    folder = session / "integrate" / f"{name}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    overrides = folder / "overrides.py"
    write_bytes_atomic(overrides, overrides_source(adapter, name, replace, params, _launcher_expression(name, launcher, shipped, folder),
                                                   digest).encode())
    return name, launcher, overrides


def _launcher(kernel: str, workspace: Workspace) -> tuple[str, Path, bool]:
    """(the kernel's name, its launcher file, whether it is shipped): a shipped fusion library kernel by name, or a
    workspace folder NAME/ with NAME.py."""
    if re.match(r"^[a-z_]+$", kernel) and (shipped_kernels("triton", kernel) / f"{kernel}.py").is_file():
        return kernel, shipped_kernels("triton", kernel) / f"{kernel}.py", True
    folder = workspace.resolve(kernel, kind="dir", what="kernel")
    launcher = folder / f"{folder.name}.py"
    if not launcher.is_file():
        raise HyperloomError(f"{kernel!r} has no launcher {folder.name}.py",
                             "give a fusion library kernel's name (rmsnorm, silu_and_mul, layernorm) or a folder NAME/ holding NAME.py")
    return folder.name, launcher, False


def _launcher_expression(name: str, launcher: Path, shipped: bool, folder: Path) -> str:
    """Where the overrides module finds the launcher, portably: a shipped kernel in the installed package, a workspace
    kernel relative to the overrides file (so the workspace can move, or go to another machine)."""
    if shipped:
        return f"shipped_kernels('triton', {name!r}) / {launcher.name!r}"
    relative = os.path.relpath(launcher, folder)
    return f"Path(__file__).resolve().parent / {relative!r}"


def _verdict(result: CandidateResult, name: str, replace: str) -> tuple[IntegrateVerdict, str]:
    where = f"{name} in place of {replace.rsplit(':', 1)[-1]}"
    if result.verdict == "FASTER":
        return "KEEP", f"KEEP {where}: {result.reason}; outputs within the frozen tolerance"
    if result.verdict == "NO_OP":
        return "NOT_ENGAGED", f"NOT_ENGAGED {where}: {result.reason} (the model never called it: check the replace target)"
    if result.verdict in ("CRASH", "TIMEOUT", "RAISED"):
        return result.verdict, f"{result.verdict} {where}: {result.reason}"
    why = result.reason if result.verdict in ("REJECTED", "IMPOSSIBLE") else f"not faster end to end: {result.reason}"
    return "REVERT", f"REVERT {where}: {why}"


def _engagement_figures(result: CandidateResult) -> tuple[int | None, float | None, float | None]:
    """(calls in one step, the wrapper's share of a step, its cost per call in µs) from the candidate's engagement."""
    engaged = next((e for e in result.engagement if e.lever.startswith("overrides:")), None)
    if engaged is None:
        return None, None, None
    step_s = min(result.candidate_legs_s) if result.candidate_legs_s else None
    share = (engaged.calls * engaged.wrapper_us * 1e-6 / step_s if engaged.calls is not None and engaged.wrapper_us is not None and step_s
             else None)
    return engaged.calls, share, engaged.wrapper_us
