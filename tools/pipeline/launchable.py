"""What the pipeline builds and runs: a spec's variant on one target and shape, its launch geometry evaluated (launch.py
makes one; a language's build in languages.py takes and returns one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hyperloom.tools.kernelspec.load import LoadedSpec
from hyperloom.tools.kernelspec.models import Variant
from hyperloom.tools.runtime.models import ArgSpec


class CompiledParameters(Protocol):
    """How a built kernel's parameters differ from the spec's arguments (Triton drops constants and adds scratch)."""

    def arg_specs(self, specs: list[ArgSpec], grid: list[int]) -> list[ArgSpec]: ...


@dataclass(frozen=True)
class Launchable:
    """A spec's variant on one target and shape, with its launch geometry evaluated."""

    loaded: LoadedSpec
    variant_name: str
    variant: Variant
    target: str
    shape: dict[str, int]
    backend: str
    grid: list[int]
    block: list[int]
    shared_bytes: int
    symbol: str | None = None  # the entry's symbol in the built code object, once its language's build has resolved it
    parameters: CompiledParameters | None = None  # set by a build whose kernel takes other parameters than the spec's arguments

    @property
    def input_sets(self) -> list[str]:
        return ["seeded", *self.loaded.spec.adversarial]

    @property
    def language_name(self) -> str:
        return self.loaded.source_of(self.variant)[1]
