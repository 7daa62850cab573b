"""A spec bound to a Triton kernel: its arguments in the function's order, every constexpr given a value.

Pure functions over what `describe_kernel` read from the kernel file. A constexpr takes, first to last:
a define or tuning value of its name, a shape variable of its name, an @triton.heuristics value
(computed in the worker), the parameter's default. `num_warps`, `num_stages` and Triton's other
launch options are defines or tuning values too; `autotune_config: i` stands for the i-th config of
the kernel's own @triton.autotune list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.kernelspec.models import BufferArg, ScalarArg
from hyperloom.tools.triton.models import AUTOTUNE_CONFIG, OPTIONS, KernelInfo

Value = int | float | str | bool
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")


@dataclass(frozen=True)
class Binding:
    """What one build of the kernel takes besides its arguments."""

    constexprs: dict[str, Value]
    options: dict[str, int]
    heuristics: list[str] = field(default_factory=list)  # constexprs the worker computes with the kernel's own heuristics

    def key(self) -> dict[str, object]:
        return {"constexprs": {k: [type(v).__name__, v] for k, v in sorted(self.constexprs.items())},
                "options": dict(sorted(self.options.items())), "heuristics": self.heuristics}


def parse_value(value: str | int) -> Value:
    """A define's text as the Python value a Triton caller would pass: int, bool, float, else the text."""
    if isinstance(value, bool | int):
        return value
    text = str(value).strip()
    if _INT.fullmatch(text):
        return int(text)
    if text in ("True", "true", "False", "false"):
        return text in ("True", "true")
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def expand_autotune(params: Mapping[str, str | int], variant_defines: Mapping[str, object], info: KernelInfo) -> dict[str, str | int]:
    """`autotune_config` (in params, else in the variant's defines) replaced by that config's values; other params win."""
    chosen = params.get(AUTOTUNE_CONFIG, variant_defines.get(AUTOTUNE_CONFIG))
    rest = {k: v for k, v in params.items() if k != AUTOTUNE_CONFIG}
    if chosen is None:
        return rest
    if not info.autotune:
        raise HyperloomError(f"{AUTOTUNE_CONFIG} is set, and {info.entry} has no @triton.autotune configs",
                             f"drop {AUTOTUNE_CONFIG}, or give the constexprs values in defines and tuning")
    index = parse_value(chosen)  # type: ignore[arg-type]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(info.autotune):
        raise HyperloomError(f"{AUTOTUNE_CONFIG} {chosen!r} is not an index of {info.entry}'s {len(info.autotune)} autotune configs",
                             f"use 0 to {len(info.autotune) - 1}")
    config = info.autotune[index]
    values = {k: v if isinstance(v, int) and not isinstance(v, bool) else str(v) for k, v in config.params().items()}
    return {**values, **rest}


def check_args(info: KernelInfo, args: Sequence[BufferArg | ScalarArg]) -> None:
    """The spec's args are the kernel's non-constexpr parameters: same names, same order."""
    declared, runtime = [a.name for a in args], info.runtime
    if declared == runtime:
        return
    missing = [n for n in runtime if n not in declared]
    extra = [n for n in declared if n not in runtime]
    constexpr = [n for n in extra if n in {p.name for p in info.constexprs}]
    detail = "; ".join(filter(None, [
        f"missing {missing}" if missing else "",
        f"{constexpr} are constexprs (give them defines, shape variables or tuning values, not args)" if constexpr else "",
        f"{[n for n in extra if n not in constexpr]} are not parameters of {info.entry}" if len(extra) > len(constexpr) else "",
        "the order differs" if not missing and not extra else "",
    ]))
    raise HyperloomError(
        f"args {declared} do not match {info.entry}'s non-constexpr parameters {runtime}: {detail}",
        "declare one buffer or scalar per non-constexpr parameter, named and ordered as the function's",
    )


def bind(info: KernelInfo, args: Sequence[BufferArg | ScalarArg], defines: Mapping[str, str | int], shape: Mapping[str, int]) -> Binding:
    """Every constexpr's value and the launch options, or one error naming what is missing or unknown."""
    check_args(info, args)
    names = {p.name for p in info.constexprs}
    unknown = [d for d in defines if d not in names and d not in OPTIONS and d != AUTOTUNE_CONFIG]
    if unknown:
        raise HyperloomError(
            f"defines {unknown} are neither constexprs of {info.entry} ({sorted(names) or 'it has none'}) nor Triton options "
            f"{list(OPTIONS)}",
            "name a constexpr parameter or an option (num_warps, num_stages, …); runtime arguments are args, not defines",
        )
    constexprs: dict[str, Value] = {}
    pending: list[str] = []
    for param in info.constexprs:
        if param.name in defines:
            constexprs[param.name] = parse_value(defines[param.name])
        elif param.name in shape:
            constexprs[param.name] = shape[param.name]
        elif param.name in info.heuristics:
            pending.append(param.name)
        elif param.has_default:
            constexprs[param.name] = param.default  # type: ignore[assignment]
        else:
            raise HyperloomError(
                f"constexpr {param.name} of {info.entry} has no value (no define, shape variable, tuning value, heuristic or "
                "default names it)",
                f"give it one: defines: {{{param.name}: …}}, a shape variable {param.name}, a tuning value"
                + (f", or {AUTOTUNE_CONFIG}: <index> for one of the kernel's {len(info.autotune)} autotune configs" if info.autotune
                   else ""),
            )
    options = {name: _option(name, defines[name]) for name in OPTIONS if name in defines}
    return Binding(constexprs=constexprs, options=options, heuristics=pending)


def _option(name: str, value: str | int) -> int:
    parsed = parse_value(value)
    if isinstance(parsed, bool) or not isinstance(parsed, int):
        raise HyperloomError(f"the Triton option {name} takes an integer, got {value!r}", f"give {name} an integer")
    if name == "num_warps" and (parsed < 1 or parsed & (parsed - 1) or parsed > 32):
        raise HyperloomError(f"num_warps {parsed} is not a power of two from 1 to 32", "use 1, 2, 4, 8, 16 or 32")
    if name == "num_ctas" and parsed != 1:
        raise HyperloomError(f"num_ctas {parsed}: Hyperloom's runtime launches no thread-block clusters", "use num_ctas 1 (the default)")
    if parsed < 0:
        raise HyperloomError(f"the Triton option {name} is {parsed}, below zero", f"give {name} a non-negative integer")
    return parsed
