"""The languages compile_kernel builds: hip, cuda and asm for GPUs, c and cpp twins for the host CPU."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.kernelspec.entry import exported_functions, resolve_symbol
from hyperloom.tools.kernelspec.load import LoadedSpec, resolved_defines
from hyperloom.tools.kernelspec.signature import read_signature
from hyperloom.tools.pipeline.build import compile_variant
from hyperloom.tools.pipeline.languages import Language, Report
from hyperloom.tools.pipeline.launch import Launchable, specialize


class Compiled(Language):
    """A language whose sources compile_kernel builds with defines, the entry found among the built kernels."""

    def check_spec(self, loaded: LoadedSpec, workspace: Workspace, problems: Report) -> None:
        """Each of this language's variants names a function its source declares, read from clang's AST without a build."""
        for name, variant in loaded.spec.variants.items():
            source, language_name = loaded.source_of(variant)
            if language_name != self.name or not source.is_file():
                continue
            function = variant.entry.partition("<")[0].strip().split("::")[-1]
            try:
                self.declares(source, function)
            except HyperloomError as exc:
                problems(f"variants.{name}.entry", "error" if "declares no" in exc.cause else "warning", exc.cause, exc.next_step)

    def declares(self, source: Path, function: str) -> None:
        """Raise when `source` declares no function `function` (the parse spec_init reads parameters from)."""
        read_signature(source, function, self.name)

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


class Assembly(Compiled):
    def declares(self, source: Path, function: str) -> None:
        text = source.read_text(errors="replace")
        if not re.search(rf"^\s*{re.escape(function)}\s*:", text, re.M):
            raise HyperloomError(f"{source.name} defines no label {function!r}",
                                 "name the kernel's symbol as the assembly defines it (its label)")


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
ASM = _language(Assembly, "asm", "amd")
C = _language(HostC, "c", "host")
CPP = _language(HostCpp, "cpp", "host")
