"""Triton as a pipeline language: compiled ahead of time for gfx and sm_XX targets, run by its interpreter on host."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.drivers import HOST_TARGET
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.kernelspec.load import LoadedSpec
from hyperloom.tools.pipeline.languages import Language, Report
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.triton.autotune import autotune_choice
from hyperloom.tools.triton.check import check_triton
from hyperloom.tools.triton.launch import triton_build_with
from hyperloom.tools.triton.loader import describe_kernel
from hyperloom.tools.triton.models import AutotuneChoice


class Triton(Language):
    name = "triton"
    kinds = frozenset({"amd", "nvidia", "host"})
    block_from_build = True

    def backend(self, target: str) -> str:
        return "triton_interpreter" if target == HOST_TARGET else super().backend(target)  # on the CPU: its interpreter, for the gate only

    def build(self, launchable: Launchable, workspace: Workspace, params: Mapping[str, str | int]) -> tuple[Launchable, TargetBuild]:
        return triton_build_with(launchable, workspace, dict(params))

    def check_spec(self, loaded: LoadedSpec, workspace: Workspace, problems: Report) -> None:
        check_triton(loaded, workspace, problems)

    def timing_refusal(self, target: str) -> HyperloomError | None:
        if target != HOST_TARGET:
            return None
        return HyperloomError("tune ranks candidates by kernel time, and on target host a Triton kernel runs in Triton's interpreter, "
                              "whose times are not kernel times",
                              "tune on a GPU target (gfx…, sm_XX); on the CPU, bench --target host gates the kernel's math")

    def own_tuner_choice(self, launchable: Launchable, inputs: Any, workspace: Workspace, device: int | None) -> AutotuneChoice | None:
        source, _ = launchable.loaded.source_of(launchable.variant)
        if not describe_kernel(source, launchable.variant.entry, workspace).autotune:
            return None
        return autotune_choice(launchable, inputs, workspace, device)


TRITON = Triton()
