"""A Triton variant through the pipeline: autotune_config expanded, tuning values split into geometry and
constexprs (the pipeline's own rule), the kernel bound and built, and its launch as the compiled kernel wants it.

The runtime launches the cubin or hsaco like any other code object: block = num_warps × warp size, dynamic
shared memory from the compiled kernel, the spec's arguments less those Triton specialized into constants
(integers equal to 1), then the hidden scratch pointers Triton ≥ 3.3 appends (global, then profile scratch).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.runtime.models import ArgSpec
from hyperloom.tools.kernelspec.load import resolved_defines
from hyperloom.tools.pipeline.launch import Launchable, arg_specs, specialize
from hyperloom.tools.triton.build import build_triton
from hyperloom.tools.triton.constexprs import bind, expand_autotune
from hyperloom.tools.triton.loader import describe_kernel
from hyperloom.tools.triton.models import AUTOTUNE_CONFIG

_SCALAR_DTYPES = {"i32": "int32", "i64": "int64", "u32": "uint32", "u64": "uint64", "fp32": "float32", "fp64": "float64"}
SCRATCH_NAMES = ("triton_global_scratch", "triton_profile_scratch")


@dataclass(frozen=True)
class TritonLaunch:
    """How the compiled kernel's parameters differ from the spec's arguments."""

    kept: tuple[tuple[str, str], ...]  # (argument, Triton type) the kernel still takes, in order
    scratch_bytes_per_program: tuple[int, ...]  # one per hidden pointer

    def arg_specs(self, specs: list[ArgSpec], grid: list[int]) -> list[ArgSpec]:
        """The launch's parameters: kept arguments (scalars in the width Triton compiled them for), then scratch."""
        by_name = {s.name: s for s in specs}
        launched = []
        for name, kind in self.kept:
            spec = by_name[name]
            if spec.kind == "scalar":
                if kind not in _SCALAR_DTYPES:
                    raise ValueError(f"Triton compiled scalar {name} as {kind}, which the runtime cannot pass")
                value = spec.value if kind.startswith("fp") else int(spec.value)  # type: ignore[arg-type]
                spec = spec.model_copy(update={"dtype": _SCALAR_DTYPES[kind], "value": value})
            launched.append(spec)
        programs = 1
        for size in grid:
            programs *= size
        for name, per_program in zip(SCRATCH_NAMES, self.scratch_bytes_per_program, strict=False):
            nbytes = per_program * programs
            launched.append(ArgSpec(name=name, kind="buffer", dtype="uint8", nbytes=nbytes, role="scratch", shape=[max(nbytes, 1)]))
        return launched


def launch_of(record: dict[str, Any]) -> TritonLaunch:
    sizes = (record["global_scratch_size"], record["profile_scratch_size"])[: record["hidden"]]
    return TritonLaunch(kept=tuple((name, kind) for name, kind in record["kept"]), scratch_bytes_per_program=tuple(sizes))


def triton_build_with(launchable: Launchable, workspace: Workspace, params: dict[str, str | int]) -> tuple[Launchable, TargetBuild]:
    """A Triton variant's build: the launchable as the compiled kernel launches, and its build."""
    source, _ = launchable.loaded.source_of(launchable.variant)
    info = describe_kernel(source, launchable.variant.entry, workspace)
    expanded = expand_autotune(params, launchable.variant.defines, info)
    specialized, defines = specialize(launchable, expanded)
    if any(size < 1 for size in specialized.grid):
        raise HyperloomError(f"the launch grid {specialized.grid} of {launchable.loaded.spec.name}/{launchable.variant_name} is not "
                             f"positive at shape {specialized.shape}",
                             "fix launch.grid: every axis must be at least 1 (ceil_div(n, BLOCK) rather than n // BLOCK)")
    merged = {**resolved_defines(specialized.variant, specialized.shape), **defines}
    merged.pop(AUTOTUNE_CONFIG, None)  # expanded above into its values
    binding = bind(info, specialized.loaded.spec.args, merged, specialized.shape)
    args = arg_specs(specialized, workspace.root, None)  # dtypes, sizes and scalar values: what specialization reads
    build, record = build_triton(source, launchable.variant.entry, launchable.target, binding, args, workspace)
    if record is None:  # a failed build, or the interpreter's plan (it takes the spec's arguments as they are)
        return replace(specialized, symbol=launchable.variant.entry), build
    return replace(specialized, symbol=record["name"], block=[record["num_warps"] * record["warp_size"]], shared_bytes=record["shared"],
                   parameters=launch_of(record)), build
