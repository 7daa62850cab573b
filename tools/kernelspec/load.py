"""Read kernel.yaml, resolve its files inside the workspace, evaluate shapes and draw inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import ValidationError

from hyperloom.core.dtypes import float_info, is_float, numpy_dtype
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.kernelspec.expr import evaluate, evaluate_int
from hyperloom.tools.kernelspec.models import BufferArg, DefineExpr, KernelSpec, ScalarArg, Variant

SPEC_HELP = ("compare it with a shipped example (`hyperloom spec example` lists them, `hyperloom spec example NAME` copies one into"
             " the workspace); every field is documented in the skill's spec.md, and spec_check reports every problem at once")
SPEC_LIMIT_BYTES = 1 << 20  # a kernel.yaml is a page of text; anything larger is not one


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with every file it names resolved inside its workspace."""

    spec: KernelSpec
    path: Path
    reference_file: Path
    reference_name: str

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

    def shape(self, index: int) -> dict[str, int]:
        if not 0 <= index < len(self.spec.shapes):
            raise HyperloomError(f"{self.spec.name} has {len(self.spec.shapes)} shapes; index {index} is out of range",
                                 "pass a shape index from 0")
        return dict(self.spec.shapes[index])


def read_spec(path: Path) -> tuple[Path, object]:
    """The spec file (a kernel.yaml or its folder) and its parsed YAML, or a clear error."""
    if path.is_dir():
        path = path / "kernel.yaml"
    if not path.is_file():
        raise HyperloomError(f"{path} is not a kernel spec", "pass a kernel.yaml file, or the folder that holds one")
    if path.stat().st_size > SPEC_LIMIT_BYTES:
        raise HyperloomError(f"{path.name} is {path.stat().st_size} bytes; a kernel spec is at most {SPEC_LIMIT_BYTES}",
                             "pass a kernel.yaml")
    try:
        return path, yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise HyperloomError(f"{path.name} is not valid YAML ({str(exc)[:300]})", "fix the YAML syntax") from exc
    except RecursionError as exc:
        raise HyperloomError(f"{path.name} nests too deeply to be a kernel spec",
                             "write the spec as the documented flat mapping (hyperloom spec example)") from exc


def load_spec(path: Path, workspace: Workspace) -> LoadedSpec:
    """Read and validate a kernel.yaml; every file it names (sources, the reference and the modules
    beside it) must resolve inside `workspace`, or loading is refused."""
    path, raw = read_spec(workspace.check(path, what="spec"))
    try:
        spec = KernelSpec.model_validate(raw)
    except ValidationError as exc:
        raise HyperloomError(f"{path.name} does not follow the kernel spec: {describe_spec_error(exc)}", SPEC_HELP) from exc
    return locate(spec, path, workspace)


def locate(spec: KernelSpec, path: Path, workspace: Workspace, sources: bool = True) -> LoadedSpec:
    """A validated spec read from `path` with the files it names resolved; any outside `workspace`, or missing, is refused.
    sources=False resolves the reference only (spec_check on a draft whose kernel source is still to write)."""
    for name, variant in spec.variants.items() if sources else ():
        source = workspace.check(path.parent / (variant.source or spec.source), raw=variant.source or spec.source, must_exist=False,
                                 kind="file", what=f"variant {name!r}'s source")
        if not source.is_file():
            raise HyperloomError(f"variant {name!r} names source {variant.source or spec.source!r}, which does not exist beside "
                                 f"{path.name}", "fix the source path")
    file, function = reference_parts(spec.reference)
    reference = workspace.check(path.parent / file, raw=file, must_exist=False, kind="file", what="reference")
    if not reference.is_file():
        raise HyperloomError(f"reference {spec.reference!r} names {file}, which does not exist beside {path.name}",
                             "fix the reference entry: 'file.py:function'")
    for sibling in reference.parent.glob("*.py"):  # the reference may import them by name
        workspace.check(sibling, what="a module beside the reference")
    return LoadedSpec(spec, path, reference, function)


def field_path(loc: tuple[object, ...]) -> str:
    """pydantic's location as the spec's field path: args[2].shape[0] (union tags dropped)."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("buffer", "scalar") and text.endswith("]"):
            continue
        else:
            text += f".{part}" if text else str(part)
    return text or "(root)"


def describe_spec_error(error: ValidationError, limit: int = 5) -> str:
    items = error.errors(include_url=False, include_input=False)
    shown = "; ".join(f"{field_path(i['loc'])}: {i['msg']}" for i in items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def reference_parts(text: str) -> tuple[str, str]:
    file, _, function = text.partition(":")
    if not file.endswith(".py") or not function.isidentifier():
        raise HyperloomError(f"reference {text!r} is not 'file.py:function'",
                             "name a Python file beside the spec and a function in it, e.g. reference.py:rmsnorm")
    return file, function


def resolved_defines(variant: Variant, shape: Mapping[str, int]) -> dict[str, str | int]:
    """The variant's defines at a shape: {expr: ...} values evaluated (to integers), the rest as written."""
    return {
        name: evaluate_int(value.expr, shape, f"define {name}") if isinstance(value, DefineExpr) else value
        for name, value in variant.defines.items()
    }


def buffer_shape(arg: BufferArg, shape: Mapping[str, int]) -> tuple[int, ...]:
    dims = tuple(evaluate_int(d, shape, f"shape of {arg.name}") for d in arg.shape)
    if any(d < 0 for d in dims):
        raise HyperloomError(f"buffer {arg.name} gets a negative dimension {dims} at shape {dict(shape)}", "check the shape expressions")
    return dims


def argument_value(arg: BufferArg | ScalarArg, shape: Mapping[str, int]) -> tuple[int, ...] | int | float:
    """A buffer's dimensions or a scalar's value at a shape: what tuning a shape variable must leave unchanged."""
    return buffer_shape(arg, shape) if isinstance(arg, BufferArg) else scalar_value(arg, shape)


def scalar_value(arg: ScalarArg, shape: Mapping[str, int]) -> int | float:
    value = evaluate(arg.value, shape, f"value of {arg.name}")
    return int(value) if arg.dtype.startswith(("int", "uint")) else float(value)


def output_buffers(spec: KernelSpec) -> list[BufferArg]:
    """The buffers a kernel writes (outputs and inouts): what its reference returns and its gate checks."""
    return [a for a in spec.args if isinstance(a, BufferArg) and a.role in ("output", "inout")]


def draw_inputs(spec: KernelSpec, shape: Mapping[str, int], case: str = "seeded", seed: int | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs for every input buffer, or an adversarial set (zeros, ones, extremes, denormals). `seed` replaces
    the spec's (a secret set: drawn as the seeded set is, from a seed no candidate can know)."""
    rng = np.random.default_rng([spec.seed if seed is None else seed, sum(map(ord, case))])
    arrays = {}
    for arg in spec.args:
        if not isinstance(arg, BufferArg) or arg.role in ("output", "scratch"):
            continue
        dims, dtype = buffer_shape(arg, shape), numpy_dtype(arg.dtype)
        arrays[arg.name] = _draw(arg, dims, dtype, rng, case)
    return arrays


def _draw(arg: BufferArg, dims: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator, case: str) -> np.ndarray:
    """One buffer's values. Floats are drawn as values and rounded to the dtype (bfloat16 and fp8 included), never as bit patterns."""
    if case == "zeros" or arg.init == "zeros":
        return np.zeros(dims, dtype)
    if case == "ones" or arg.init == "ones":
        return np.ones(dims, dtype)
    if not is_float(dtype):
        if case == "extremes":
            info = np.iinfo(dtype)
            return rng.choice(np.array([info.max, info.min, 0, 1], dtype=dtype), size=dims).astype(dtype)
        return rng.integers(int(arg.low), int(arg.high) + 1, size=dims, dtype=np.int64).astype(dtype)
    info = float_info(dtype)
    if case == "extremes":
        return rng.choice(np.array([float(info.max) / 4, -float(info.max) / 4, 0, 1], dtype=dtype), size=dims).astype(dtype)
    if case == "denormals":
        # fp8 has 3 or 7 subnormals a sign: stay below the smallest normal
        steps = 64 if 2 ** int(info.nmant) > 64 else 2 ** int(info.nmant) - 1
        return (rng.integers(-steps, steps, size=dims) * float(info.smallest_subnormal)).astype(dtype)
    if arg.init == "uniform":
        if max(abs(arg.low), abs(arg.high)) > float(info.max):
            raise HyperloomError(f"buffer {arg.name} draws uniform in [{arg.low:g}, {arg.high:g}], beyond {dtype.name}'s largest finite "
                                 f"value {float(info.max):g}",
                                 f"give low and high within ±{float(info.max):g}, or a wider dtype")
        return rng.uniform(arg.low, arg.high, size=dims).astype(dtype)
    return rng.standard_normal(size=dims).astype(dtype)
