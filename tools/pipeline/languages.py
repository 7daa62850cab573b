"""Kernel languages as a registry: each says which targets it builds for, which backend runs it, and how it builds.

The pipeline asks the registry and never which language it holds. A language lives in its own module, named in
LANGUAGES by 'module:attribute' and imported the first time it is asked for (as the tool catalog names tools), so
a language above the pipeline (Triton) plugs in without the pipeline importing it.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.compile.drivers import AMD_TARGET, HOST_TARGET, NVIDIA_TARGET

if TYPE_CHECKING:
    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.compile.models import TargetBuild
    from hyperloom.tools.kernelspec.load import LoadedSpec
    from hyperloom.tools.pipeline.launchable import Launchable

LANGUAGES: Mapping[str, str] = {
    "hip": "hyperloom.tools.pipeline.native:HIP",
    "cuda": "hyperloom.tools.pipeline.native:CUDA",
    "asm": "hyperloom.tools.pipeline.native:ASM",
    "c": "hyperloom.tools.pipeline.native:C",
    "cpp": "hyperloom.tools.pipeline.native:CPP",
    "triton": "hyperloom.tools.triton.language:TRITON",
}
Report = Callable[..., None]
"""Takes a spec problem as report(path, severity, cause, next_step, shape=None) (spec_check's list of problems)."""
TARGET_KINDS: Mapping[str, re.Pattern[str]] = {"amd": AMD_TARGET, "nvidia": NVIDIA_TARGET, "host": re.compile(re.escape(HOST_TARGET))}


def target_kind(target: str) -> str | None:
    """'amd', 'nvidia' or 'host'; None for a name that is none of them."""
    return next((kind for kind, pattern in TARGET_KINDS.items() if pattern.fullmatch(target)), None)


def native_backend(target: str) -> str:
    """The backend that runs a compiled code object for `target`: c on the host, cuda for sm_XX, hip for gfx."""
    return "c" if target == HOST_TARGET else "cuda" if NVIDIA_TARGET.fullmatch(target) else "hip"


class Language:
    """One kernel language: the kinds of target it builds for, the backend that runs each, and its build."""

    name: str = ""
    kinds: frozenset[str] = frozenset()
    block_from_build: bool = False
    """The launch's block comes from the build (Triton: num_warps × the warp size), not from the spec."""

    def builds_for(self, target: str) -> bool:
        """Whether it builds for `target`; a name of no known kind is left to a GPU language's compiler to refuse."""
        kind = target_kind(target)
        return kind in self.kinds if kind is not None else self.kinds != {"host"}

    def backend(self, target: str) -> str:
        """The runtime backend that runs this language's code objects for `target`."""
        return native_backend(target)

    def build(self, launchable: Launchable, workspace: Workspace, params: Mapping[str, str | int]) -> tuple[Launchable, TargetBuild]:
        """Tuning values applied and the variant compiled: the launch as the built code object takes it, and the build."""
        raise NotImplementedError

    def check_spec(self, loaded: LoadedSpec, workspace: Workspace, problems: Report) -> None:
        """spec_check's own checks of this language's variants (the entry's parameters, …); none by default."""

    def timing_refusal(self, target: str) -> HyperloomError | None:
        """Why tune cannot rank this language's kernels by kernel time on `target`; None when it can."""
        return None

    def own_tuner_choice(self, launchable: Launchable, inputs: Any, workspace: Workspace, device: int | None) -> Any:
        """The config the kernel's own autotuner picks here (a model tune records and queues), or None when it has none."""
        return None


@functools.cache
def language(name: str) -> Language:
    """The registered language called `name` (its module imported once)."""
    if name not in LANGUAGES:
        raise HyperloomError(f"{name!r} is not a kernel language Hyperloom knows", f"use one of {', '.join(LANGUAGES)}")
    module, _, attribute = LANGUAGES[name].partition(":")
    found: Language = getattr(importlib.import_module(module), attribute)
    return found


def languages() -> list[Language]:
    """Every registered language, in LANGUAGES' order."""
    return [language(name) for name in LANGUAGES]
