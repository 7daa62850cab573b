"""spec_check for Triton variants: the kernel file read in a worker, its parameters against the spec's args,
every constexpr given a value at every shape, tuning names and autotune indices, and the kernel's own
@triton.autotune list offered as the tuning space when the spec does not search it yet."""

from __future__ import annotations

from collections.abc import Callable

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.kernelspec.load import LoadedSpec, resolved_defines
from hyperloom.tools.kernelspec.models import Variant
from hyperloom.tools.triton.constexprs import bind, check_args, expand_autotune
from hyperloom.tools.triton.loader import describe_kernel
from hyperloom.tools.triton.models import AUTOTUNE_CONFIG, OPTIONS, KernelInfo

Report = Callable[..., None]


def autotune_tuning_line(info: KernelInfo) -> str:
    """The tuning entry that makes the kernel's own autotune configs the search space, with what each index is."""
    configs = info.autotune or []
    listing = "; ".join(f"{i}: {c.label()}" for i, c in enumerate(configs))
    return f"tuning: {{{AUTOTUNE_CONFIG}: [{', '.join(str(i) for i in range(len(configs)))}]}}  # {listing}"


def check_triton(loaded: LoadedSpec, workspace: Workspace, report: Report) -> None:
    """Report the problems of every Triton variant; nothing raises."""
    for name, variant in loaded.spec.variants.items():
        source, language = loaded.source_of(variant)
        if language != "triton":
            continue
        where = f"variants.{name}"
        try:
            info = describe_kernel(source, variant.entry, workspace)
        except HyperloomError as exc:
            report(f"{where}.entry" if "entry" in exc.cause else "source", "error", exc.cause, exc.next_step)
            continue
        try:
            check_args(info, loaded.spec.args)
        except HyperloomError as exc:
            report("args", "error", exc.cause, exc.next_step)
            continue
        _variant(loaded, name, variant, info, report)


def _variant(loaded: LoadedSpec, name: str, variant: Variant, info: KernelInfo, report: Report) -> None:
    where = f"variants.{name}"
    tuning = loaded.spec.tuning_of(variant)
    tuning_where = f"{where}.tuning" if variant.tuning is not None else "tuning"
    names = {p.name for p in info.constexprs} | set(OPTIONS) | {AUTOTUNE_CONFIG}
    for tuned, values in tuning.items():
        if tuned not in names and all(tuned not in shape for shape in loaded.spec.shapes):
            report(f"{tuning_where}.{tuned}", "error",
                   f"{tuned} is neither a constexpr of {info.entry}, a Triton option, {AUTOTUNE_CONFIG} nor a shape variable",
                   f"tune its constexprs ({', '.join(p.name for p in info.constexprs) or 'none'}), num_warps, num_stages or "
                   f"{AUTOTUNE_CONFIG}")
        if tuned == AUTOTUNE_CONFIG:
            bad = [v for v in values if not str(v).isdigit() or int(v) >= len(info.autotune or [])]
            if bad:
                report(f"{tuning_where}.{tuned}", "error",
                       f"{AUTOTUNE_CONFIG} values {bad} are not indices of {info.entry}'s {len(info.autotune or [])} autotune configs",
                       f"use 0 to {len(info.autotune or []) - 1}" if info.autotune
                       else f"drop {AUTOTUNE_CONFIG}: the kernel has no @triton.autotune")
    if info.autotune and AUTOTUNE_CONFIG not in tuning:
        report(tuning_where, "warning",
               f"{info.entry} has {len(info.autotune)} @triton.autotune configs, and the tuning space does not search them",
               f"add them: {autotune_tuning_line(info)}")
    for index, shape in enumerate(loaded.spec.shapes):
        try:
            expanded = expand_autotune({}, variant.defines, info)
            merged = {**resolved_defines(variant, shape), **expanded}
            merged.pop(AUTOTUNE_CONFIG, None)
            bind(info, loaded.spec.args, merged, {**shape, **{k: int(v) for k, v in expanded.items() if k in shape}})
        except HyperloomError as exc:
            report(f"{where}.defines", "error", exc.cause, exc.next_step, shape=index)
            return
