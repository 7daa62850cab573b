"""The languages compile_kernel builds: hip, cuda and asm for GPUs, c and cpp twins for the host CPU."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.kernelspec.entry import exported_functions, resolve_symbol
from hyperloom.tools.kernelspec.load import resolved_defines
from hyperloom.tools.pipeline.build import compile_variant
from hyperloom.tools.pipeline.languages import Language
from hyperloom.tools.pipeline.launch import Launchable, specialize


class Compiled(Language):
    """A language whose sources compile_kernel builds with defines, the entry found among the built kernels."""

    def build(self, launchable: Launchable, workspace: Workspace, params: Mapping[str, str | int]) -> tuple[Launchable, TargetBuild]:
        specialized, defines = specialize(launchable, params)
        build = compile_variant(specialized, workspace, defines)
        if not build.ok:
            return specialized, build
        symbols = self.symbols(workspace, build)
        if symbols is None:
            return specialized, build
        merged = {**resolved_defines(specialized.variant, specialized.shape), **defines}
        return replace(specialized, symbol=resolve_symbol(specialized.variant.entry, merged, symbols)), build

    def symbols(self, workspace: Workspace, build: TargetBuild) -> list[str] | None:
        """The symbols the entry is looked up among; None when the runtime finds the entry by its name itself."""
        return [k.name for k in build.kernels]


class HostC(Compiled):
    def symbols(self, workspace: Workspace, build: TargetBuild) -> list[str] | None:
        return None  # a C twin's function is its entry's name


class HostCpp(Compiled):
    def symbols(self, workspace: Workspace, build: TargetBuild) -> list[str] | None:
        return exported_functions(workspace.root / build.code_object)


def _language(cls: type[Compiled], name: str, *kinds: str) -> Compiled:
    made = cls()
    made.name, made.kinds = name, frozenset(kinds)
    return made


HIP = _language(Compiled, "hip", "amd", "nvidia")
CUDA = _language(Compiled, "cuda", "nvidia")
ASM = _language(Compiled, "asm", "amd")
C = _language(HostC, "c", "host")
CPP = _language(HostCpp, "cpp", "host")
