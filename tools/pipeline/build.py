"""A launchable built: through its language (tuning values applied), and the timing loop's device helpers."""

from __future__ import annotations

from collections.abc import Mapping

from hyperloom.core.errors import HyperloomError
from hyperloom.core.shipped import stage_shipped_file
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.models import CompileRequest, TargetBuild
from hyperloom.tools.kernelspec.entry import instance_source, is_template
from hyperloom.tools.kernelspec.load import resolved_defines
from hyperloom.tools.pipeline.languages import language
from hyperloom.tools.pipeline.launch import Launchable

TIMING_SOURCE = "timing.hip"


def build_with(launchable: Launchable, workspace: Workspace, params: Mapping[str, str | int]) -> tuple[Launchable, TargetBuild]:
    """Tuning parameters applied and the variant compiled with them by its language: the launch and its build."""
    return language(launchable.language_name).build(launchable, workspace, dict(params))


def compile_variant(launchable: Launchable, workspace: Workspace, defines: Mapping[str, str | int] | None = None) -> TargetBuild:
    """Compile the variant (cached) with compile_kernel, its defines overridden by `defines`; a template entry through
    its instance source."""
    source, language_name = launchable.loaded.source_of(launchable.variant)
    if is_template(launchable.variant.entry):
        source = instance_source(source, launchable.variant.entry, language_name, workspace.state_dir("instances"))
    merged = {**resolved_defines(launchable.variant, launchable.shape), **(defines or {})}
    return compile_kernel(
        CompileRequest(source=workspace.relative(source), targets=[launchable.target], language=language_name,
                       defines=[f"{k}={v}" for k, v in merged.items()]),
        workspace,
    ).builds[0]


_TIMING_BUILDS: dict[tuple[str, object], str] = {}


def timing_kernels(target: str, workspace: Workspace) -> str:
    """The timing loop's device helpers (kernels/runtime/timing.hip: the read flush, the spin) built for `target`
    (cached); their workspace-relative code object. Remembered per process while the code object is there: a
    tune session times thousands of candidates with the same helpers."""
    known = _TIMING_BUILDS.get((target, workspace.root))
    if known is not None and (workspace.root / known).is_file():
        return known
    _TIMING_BUILDS[(target, workspace.root)] = built = _build_timing_kernels(target, workspace)
    return built


def _build_timing_kernels(target: str, workspace: Workspace) -> str:
    staged = stage_shipped_file(workspace.state_dir("runtime"), "runtime", TIMING_SOURCE)
    build = compile_kernel(CompileRequest(source=workspace.relative(staged), targets=[target]), workspace).builds[0]
    if not build.ok:
        raise HyperloomError(f"the timing helpers (read flush, spin) do not build for {target}: {build.summary}",
                             "fix the toolchain for this target (compile_kernel on kernels/runtime/timing.hip shows the error)")
    return build.code_object
