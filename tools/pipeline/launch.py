"""A spec's variant on one target and shape, with its launch geometry evaluated: what the pipeline builds and runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import numpy_dtype
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.kernelspec.expr import evaluate_int
from hyperloom.tools.kernelspec.load import LoadedSpec, argument_value, buffer_shape, scalar_value
from hyperloom.tools.kernelspec.models import BufferArg, Variant
from hyperloom.tools.pipeline.languages import language, native_backend
from hyperloom.tools.pipeline.launchable import Launchable
from hyperloom.tools.runtime.models import ArgSpec


def backend_for(target: str, language_name: str | None = None) -> str:
    """The runtime backend that runs `language_name`'s code objects for `target` (None: a compiled language's: c, cuda or hip)."""
    return language(language_name).backend(target) if language_name is not None else native_backend(target)


def builds_for(loaded: LoadedSpec, variant: Variant, target: str) -> bool:
    """Whether `variant` is meant to build for `target`: its targets list, and its language's kinds of target."""
    if variant.targets is not None and target not in variant.targets:
        return False
    return language(loaded.source_of(variant)[1]).builds_for(target)


def prepare(loaded: LoadedSpec, variant: str | None, target: str, shape_index: int) -> Launchable:
    """Check the variant builds for `target` and evaluate the launch geometry at the shape."""
    variant_name, chosen = loaded.variant(variant)
    if variant is None and not builds_for(loaded, chosen, target):
        raise _first_variant_refused(loaded, variant_name, target)
    if chosen.targets is not None and target not in chosen.targets:
        raise HyperloomError(f"variant {variant_name!r} does not build for {target}", f"use one of {chosen.targets}")
    return at_shape(loaded, variant_name, chosen, target, loaded.shape(shape_index))


def _first_variant_refused(loaded: LoadedSpec, first: str, target: str) -> HyperloomError:
    """No variant was named and the spec's first one (the default) is not meant for `target`: name the variants that are."""
    fitting = [name for name, v in loaded.spec.variants.items() if builds_for(loaded, v, target)]
    cause = (f"no variant was named, and {loaded.spec.name}'s first variant {first!r} ({loaded.source_of(loaded.spec.variants[first])[1]}) "
             f"does not build for {target}")
    if not fitting:
        names = ", ".join(loaded.spec.variants)
        return HyperloomError(f"{cause}; none of its variants does",
                              f"choose a target that {names} builds for, or add a variant for {target} to the spec")
    choices = f" (variants that build for {target}: {', '.join(fitting)})" if len(fitting) > 1 else ""
    return HyperloomError(cause, f"pass variant: {fitting[0]} (CLI: --variant {fitting[0]}){choices}")


def at_shape(loaded: LoadedSpec, variant_name: str, variant: Variant, target: str, shape: dict[str, int]) -> Launchable:
    launch = loaded.spec.launch_of(variant)
    return Launchable(
        loaded=loaded, variant_name=variant_name, variant=variant, target=target, shape=shape,
        backend=backend_for(target, loaded.source_of(variant)[1]), grid=[evaluate_int(g, shape, "launch grid") for g in launch.grid],
        block=[evaluate_int(b, shape, "launch block") for b in launch.block or [1]],  # no block: the build's (Triton's)
        shared_bytes=evaluate_int(launch.shared_bytes, shape, "shared_bytes"),
    )


def specialize(launchable: Launchable, params: Mapping[str, str | int]) -> tuple[Launchable, dict[str, str | int]]:
    """Split tuning parameters: a shape variable re-evaluates the launch geometry; anything else is a define.

    A shape variable that would change an argument (a buffer's shape, a scalar's value) is refused:
    a session's inputs and references hold for one problem, and tuning searches how to run it, not what it is.
    """
    geometry = {name: value for name, value in params.items() if name in launchable.shape}
    defines = {name: value for name, value in params.items() if name not in launchable.shape}
    if not geometry:
        return launchable, defines
    shape = dict(launchable.shape)
    for name, value in geometry.items():
        if isinstance(value, bool) or not str(value).lstrip("-").isdigit():
            raise HyperloomError(f"the shape variable {name} takes an integer, got {value!r}",
                                 f"give {name} an integer (in --params, or as a tuning candidate)")
        shape[name] = int(value)
    for arg in launchable.loaded.spec.args:
        before, after = argument_value(arg, launchable.shape), argument_value(arg, shape)
        if before != after:
            raise HyperloomError(
                f"tuning {', '.join(geometry)} changes argument {arg.name} ({before} → {after}), not only the launch",
                "tune only shape variables that steer the launch geometry (threads, rows, …); pick the problem with the shape index",
            )
    return at_shape(launchable.loaded, launchable.variant_name, launchable.variant, launchable.target, shape), defines


def arg_specs(launchable: Launchable, inputs: Path, outputs: Path | None) -> list[ArgSpec]:
    """Arguments of one launch: inputs read from `inputs`, outputs written to `outputs` (None: not written back)."""
    shape = launchable.shape
    specs = []
    for arg in launchable.loaded.spec.args:
        if not isinstance(arg, BufferArg):
            specs.append(ArgSpec(name=arg.name, kind="scalar", dtype=arg.dtype, value=scalar_value(arg, shape)))
            continue
        dims = buffer_shape(arg, shape)
        nbytes = int(np.prod(dims, dtype=np.int64)) * numpy_dtype(arg.dtype).itemsize
        specs.append(
            ArgSpec(
                name=arg.name, kind="buffer", dtype=arg.dtype, nbytes=nbytes, role=arg.role, shape=list(dims),
                input_path=str(inputs / f"in_{arg.name}.npy") if arg.role in ("input", "inout") else None,
                output_path=str(outputs / f"out_{arg.name}.npy") if outputs is not None and arg.role in ("output", "inout") else None,
            )
        )
    return specs if launchable.parameters is None else launchable.parameters.arg_specs(specs, launchable.grid)
