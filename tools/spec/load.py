"""Read kernel.yaml, resolve its files, evaluate shapes, draw inputs and compute references."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import yaml
from pydantic import ValidationError

from hyperloom.core.errors import HyperloomError, describe_validation_error
from hyperloom.tools.spec.expr import evaluate, evaluate_int
from hyperloom.tools.spec.models import BufferArg, KernelSpec, ScalarArg, Variant

Reference = Callable[[dict[str, np.ndarray], dict[str, int]], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class LoadedSpec:
    spec: KernelSpec
    path: Path

    @property
    def folder(self) -> Path:
        return self.path.parent

    def variant(self, name: str | None) -> tuple[str, Variant]:
        if name is None:
            name = next(iter(self.spec.variants))
        if name not in self.spec.variants:
            raise HyperloomError(f"{self.spec.name} has no variant {name!r}", f"choose one of {sorted(self.spec.variants)}")
        return name, self.spec.variants[name]

    def source_of(self, variant: Variant) -> tuple[Path, str]:
        return self.folder / (variant.source or self.spec.source), variant.language or self.spec.language

    @cached_property
    def reference(self) -> Reference:
        file, _, function = self.spec.reference.partition(":")
        path = self.folder / file
        if not path.is_file() or not function:
            raise HyperloomError(f"reference {self.spec.reference!r} is not 'file.py:function' beside {self.path.name}", "fix the reference entry")
        module_spec = importlib.util.spec_from_file_location(f"hyperloom_reference_{self.spec.name}", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)  # the spec's own code, from the user's workspace
        try:
            return getattr(module, function)
        except AttributeError:
            raise HyperloomError(f"{file} defines no function {function!r}", "fix the reference entry") from None

    def shape(self, index: int) -> dict[str, int]:
        if not 0 <= index < len(self.spec.shapes):
            raise HyperloomError(f"{self.spec.name} has {len(self.spec.shapes)} shapes; index {index} is out of range", "pass a shape index from 0")
        return dict(self.spec.shapes[index])


def load_spec(path: Path) -> LoadedSpec:
    if path.is_dir():
        path = path / "kernel.yaml"
    if not path.is_file():
        raise HyperloomError(f"{path} is not a kernel spec", "pass a kernel.yaml file, or the folder that holds one")
    try:
        raw = yaml.safe_load(path.read_text())
        spec = KernelSpec.model_validate(raw)
    except yaml.YAMLError as exc:
        raise HyperloomError(f"{path.name} is not valid YAML ({exc})", "fix the YAML syntax") from exc
    except ValidationError as exc:
        raise HyperloomError(f"{path.name} does not follow the kernel spec: {describe_validation_error(exc)}", "compare it with kernels/microbench/copy/kernel.yaml") from exc
    loaded = LoadedSpec(spec, path)
    for name, variant in spec.variants.items():
        source, _ = loaded.source_of(variant)
        if not source.is_file():
            raise HyperloomError(f"variant {name!r} names source {source.name}, which does not exist beside {path.name}", "fix the source path")
    return loaded


def buffer_shape(arg: BufferArg, shape: Mapping[str, int]) -> tuple[int, ...]:
    dims = tuple(evaluate_int(d, shape, f"shape of {arg.name}") for d in arg.shape)
    if any(d < 0 for d in dims):
        raise HyperloomError(f"buffer {arg.name} gets a negative dimension {dims} at shape {dict(shape)}", "check the shape expressions")
    return dims


def scalar_value(arg: ScalarArg, shape: Mapping[str, int]) -> int | float:
    value = evaluate(arg.value, shape, f"value of {arg.name}")
    return int(value) if arg.dtype.startswith(("int", "uint")) else float(value)


def output_buffers(spec: KernelSpec) -> list[BufferArg]:
    """The buffers a kernel writes (outputs and inouts): what its reference returns and its gate checks."""
    return [a for a in spec.args if isinstance(a, BufferArg) and a.role in ("output", "inout")]


def draw_inputs(spec: KernelSpec, shape: Mapping[str, int], case: str = "seeded") -> dict[str, np.ndarray]:
    """Seeded inputs for every input buffer, or an adversarial set (zeros, ones, extremes, denormals)."""
    rng = np.random.default_rng([spec.seed, sum(map(ord, case))])
    arrays = {}
    for arg in spec.args:
        if not isinstance(arg, BufferArg) or arg.role in ("output", "scratch"):
            continue
        dims, dtype = buffer_shape(arg, shape), np.dtype(arg.dtype)
        arrays[arg.name] = _draw(arg, dims, dtype, rng, case)
    return arrays


def _draw(arg: BufferArg, dims: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator, case: str) -> np.ndarray:
    if case == "zeros" or arg.init == "zeros":
        return np.zeros(dims, dtype)
    if case == "ones" or arg.init == "ones":
        return np.ones(dims, dtype)
    if case == "extremes":
        info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        picks = np.array([info.max, info.min, 0, 1], dtype=dtype) if dtype.kind != "f" else np.array([info.max / 4, -info.max / 4, 0, 1], dtype=dtype)
        return rng.choice(picks, size=dims).astype(dtype)
    if case == "denormals" and dtype.kind == "f":
        tiny = np.finfo(dtype).smallest_subnormal
        return (rng.integers(-64, 64, size=dims) * tiny).astype(dtype)
    if dtype.kind == "f":
        if arg.init == "uniform":
            return rng.uniform(arg.low, arg.high, size=dims).astype(dtype)
        return rng.standard_normal(size=dims).astype(dtype)
    return rng.integers(int(arg.low), int(arg.high) + 1, size=dims, dtype=np.int64).astype(dtype)


def reference_function(loaded: LoadedSpec) -> Reference:
    """The spec's reference function, imported once per loaded spec (every input set reuses it)."""
    return loaded.reference
