"""Static checks of a parsed spec: every expression at every shape, tuning values, tolerance, variants.

Each check appends SpecProblems (field path, cause, next step) instead of raising, so spec_check
reports every problem at once. Nothing here runs user code or a compiler.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hyperloom.core.dtypes import is_float, numpy_dtype
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.compile.drivers import HOST_TARGET
from hyperloom.tools.compile.flags import check_defines
from hyperloom.tools.kernelspec.entry import check_entry
from hyperloom.tools.kernelspec.expr import evaluate, evaluate_int
from hyperloom.tools.kernelspec.models import BufferArg, DefineExpr, KernelSpec, Launch, Variant
from hyperloom.tools.pipeline.languages import language as language_of
from hyperloom.tools.pipeline.languages import target_kind

GPU_BLOCK_LIMIT = 1024  # threads per block on every NVIDIA and AMD GPU the loop targets
GRID_LIMITS = ((1 << 31) - 1, 65535, 65535)
_INT_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
               "uint64": (0, (1 << 64) - 1)}

Report = Callable[..., None]


def _host_twin(language: str) -> bool:
    """A language that builds for the host only (c, cpp)."""
    return language_of(language).kinds == {"host"}


def check_spec(spec: KernelSpec, report: Report) -> None:
    """Everything that can be checked without files, compilers or the reference."""
    _names(spec, report)
    for name, variant in spec.variants.items():
        _variant(spec, name, variant, report)
    for index, shape in enumerate(spec.shapes):
        _args_at(spec, index, shape, report)
        _metric_at(spec, index, shape, report)
        for name, variant in spec.variants.items():
            _launch_at(spec, name, variant, index, shape, report)
            _define_exprs_at(name, variant, index, shape, report)
    for name, variant in spec.variants.items():
        _tuning(spec, name, variant, report)
    _tolerance(spec, report)


def _names(spec: KernelSpec, report: Report) -> None:
    seen: set[str] = set()
    for index, arg in enumerate(spec.args):
        if not arg.name.isidentifier():
            report(f"args[{index}].name", "error", f"{arg.name!r} is not an identifier",
                   "name arguments as the kernel's parameters are named")
        if arg.name in seen:
            report(f"args[{index}].name", "error", f"argument {arg.name!r} is declared twice", "give each argument its own name")
        seen.add(arg.name)
    if not any(isinstance(a, BufferArg) and a.role in ("output", "inout") for a in spec.args):
        report("args", "error", "no argument is an output or inout buffer, so nothing can be gated",
               "mark the buffers the kernel writes as role: output (or inout)")
    names = [set(s) for s in spec.shapes]
    if any(n != names[0] for n in names[1:]):
        report("shapes", "warning", "the shapes define different variables",
               "give every shape the same variables, so every expression evaluates at every shape")


def _variant(spec: KernelSpec, name: str, variant: Variant, report: Report) -> None:
    where = f"variants.{name}"
    language = variant.language or spec.language
    try:
        check_entry(variant.entry, language)
    except HyperloomError as exc:
        report(f"{where}.entry", "error", exc.cause, exc.next_step)
    if variant.launch_args and not _host_twin(language):
        report(f"{where}.launch_args", "error", f"launch_args is for host twins (c, cpp), and this variant is {language}",
               "drop launch_args; GPU kernels read their grid from the launch")
    for target in variant.targets or []:
        if target_kind(target) not in language_of(language).kinds:
            report(f"{where}.targets", "error", f"a {language} variant cannot build for {target}",
                   "host twins (c, cpp) build for host; cuda for sm_XX; asm for gfx; hip for both gfx and sm_XX; triton for gfx, sm_XX and "
                   "host (its interpreter)")
    if _host_twin(language) and variant.targets != [HOST_TARGET]:
        report(f"{where}.targets", "warning", f"a {language} twin runs only on the host", "write targets: [host]")
    for define, value in variant.defines.items():
        if not isinstance(value, DefineExpr):
            _define_text(f"{where}.defines.{define}", define, value, report)


def _define_text(where: str, name: str, value: object, report: Report) -> None:
    try:
        check_defines([f"{name}={value}"])
    except HyperloomError as exc:
        report(where, "error", exc.cause, exc.next_step)


def _args_at(spec: KernelSpec, index: int, shape: dict[str, int], report: Report) -> None:
    for position, arg in enumerate(spec.args):
        if isinstance(arg, BufferArg):
            for axis, text in enumerate(arg.shape):
                _integer(f"args[{position}].shape[{axis}]", text, shape, index, report, minimum=1, what=f"dimension {axis} of {arg.name}")
            continue
        where = f"args[{position}].value"
        try:
            value = evaluate(arg.value, shape, f"value of {arg.name}")
        except HyperloomError as exc:
            report(where, "error", exc.cause, exc.next_step, shape=index)
            continue
        if arg.dtype in _INT_RANGES:
            low, high = _INT_RANGES[arg.dtype]
            if isinstance(value, float) and not value.is_integer():
                report(where, "error", f"{arg.name} is {value}, not a whole number, for an {arg.dtype} scalar", "use // or ceil_div",
                       shape=index)
            elif not low <= value <= high:
                report(where, "error", f"{arg.name} is {value}, outside {arg.dtype}'s range",
                       "use a wider dtype (int64) or check the expression", shape=index)
        elif not math.isfinite(float(value)):
            report(where, "error", f"{arg.name} is not finite", "check the expression", shape=index)


def _metric_at(spec: KernelSpec, index: int, shape: dict[str, int], report: Report) -> None:
    for key in ("bytes", "flops"):
        text = getattr(spec.metric, key)
        if text is not None:
            _integer(f"metric.{key}", text, shape, index, report, minimum=0, what=f"metric {key}")


def _launch_at(spec: KernelSpec, name: str, variant: Variant, index: int, shape: dict[str, int], report: Report) -> None:
    launch: Launch = spec.launch_of(variant)
    where = f"variants.{name}.launch" if variant.launch is not None else "launch"
    language = variant.language or spec.language
    gpu = not _host_twin(language)
    for axis, text in enumerate(launch.grid):
        _integer(f"{where}.grid[{axis}]", text, shape, index, report, minimum=1, what="grid", maximum=GRID_LIMITS[axis])
    if launch.block is None and not language_of(language).block_from_build:
        report(f"{where}.block", "error", f"variant {name} ({language}) has no launch block",
               "give the threads per block, e.g. block: [256]")
    elif launch.block is not None and language_of(language).block_from_build:
        report(f"{where}.block", "warning",
               f"variant {name} is a Triton kernel, whose block is num_warps × the warp size; this block is not used",
               "drop block (set num_warps in defines or tuning instead)")
    block = [_integer(f"{where}.block[{axis}]", text, shape, index, report, minimum=1, what="block")
             for axis, text in enumerate(launch.block or [1])]
    _integer(f"{where}.shared_bytes", launch.shared_bytes, shape, index, report, minimum=0, what="shared_bytes")
    if gpu and None not in block and math.prod(block) > GPU_BLOCK_LIMIT:  # type: ignore[arg-type]
        report(f"{where}.block", "error",  # type: ignore[arg-type]
               f"variant {name}'s block has {math.prod(block)} threads (more than {GPU_BLOCK_LIMIT}) at shape {index}",
               "use at most 1024 threads per block", shape=index)


def _define_exprs_at(name: str, variant: Variant, index: int, shape: dict[str, int], report: Report) -> None:
    for define, value in variant.defines.items():
        if isinstance(value, DefineExpr):
            _integer(f"variants.{name}.defines.{define}", value.expr, shape, index, report, minimum=None, what=f"define {define}")


def _integer(where: str, text: object, shape: dict[str, int], index: int, report: Report, *, minimum: int | None, what: str,
             maximum: int | None = None) -> int | None:
    try:
        value = evaluate_int(text, shape, what)  # type: ignore[arg-type]
    except HyperloomError as exc:
        report(where, "error", exc.cause, exc.next_step, shape=index)
        return None
    if minimum is not None and value < minimum:
        qualifier = "positive" if minimum == 1 else "non-negative"
        report(where, "error", f"{what} {text!r} is {value} at shape {index}, not {qualifier}", "check the expression and the shape values",
               shape=index)
    elif maximum is not None and value > maximum:
        report(where, "error", f"{what} {text!r} is {value} at shape {index}, above the limit {maximum}",
               "split the work over another grid axis", shape=index)
    return value


def _tuning(spec: KernelSpec, name: str, variant: Variant, report: Report) -> None:
    from hyperloom.tools.kernelspec.load import argument_value  # the evaluator bench uses, so the check agrees with the run

    where = f"variants.{name}.tuning" if variant.tuning is not None else "tuning"
    for tuned, values in spec.tuning_of(variant).items():
        if not values:
            report(f"{where}.{tuned}", "error", f"{tuned} has no candidate values", "list at least one value")
            continue
        if all(tuned not in shape for shape in spec.shapes):
            for value in values:
                _define_text(f"{where}.{tuned}", tuned, value, report)
            continue
        for index, shape in enumerate(spec.shapes):
            for value in values:
                if isinstance(value, bool) or not str(value).lstrip("-").isdigit():
                    report(f"{where}.{tuned}", "error", f"{tuned} is a shape variable and takes integers; {value!r} is not one",
                           "list integers")
                    break
                changed = dict(shape, **{tuned: int(value)})
                for arg in spec.args:
                    try:
                        moved = argument_value(arg, shape) != argument_value(arg, changed)
                    except HyperloomError:
                        continue  # reported by the argument checks
                    if moved:
                        report(f"{where}.{tuned}", "error",
                               f"tuning {tuned} to {value} changes argument {arg.name} at shape {index}, not only the launch",
                               "tune only shape variables that steer the launch (threads, block, warps); the problem is chosen by the "
                               "shape index", shape=index)
                        return


def _tolerance(spec: KernelSpec, report: Report) -> None:
    outputs = [a for a in spec.args if isinstance(a, BufferArg) and a.role in ("output", "inout")]
    kinds = {"f" if is_float(numpy_dtype(a.dtype)) else "i" for a in outputs}
    tolerance = spec.tolerance
    if kinds and "f" not in kinds:
        if tolerance.atol > 0 or tolerance.rtol > 0:
            report("tolerance", "warning", "every output is an integer, and the tolerance allows differences",
                   "integer results usually compare exactly: atol 0, rtol 0")
        if tolerance.max_ulp is not None:
            report("tolerance.max_ulp", "warning", "max_ulp applies to floating-point outputs only, and every output is an integer",
                   "drop max_ulp")
        if tolerance.nan_policy == "match":
            report("tolerance.nan_policy", "warning", "integer outputs hold no NaN", "drop nan_policy")
    elif "f" in kinds and tolerance.atol == 0 and tolerance.rtol == 0 and tolerance.max_ulp is None:
        report("tolerance", "warning", "floating-point outputs are compared bit for bit",
               "right for copies and exact integer math; a reordered sum needs rtol (see the skill's tolerance table)")
