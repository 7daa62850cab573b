"""Worker side of kernel integration: an overrides module (written by `integrate`, or by hand) calls `replace` to put
a kernel in place of a module's method or a function, inside the workload's worker, without editing installed
packages. Each replacement counts its calls, so a kernel that is never called is told from one that ran
(engagement), and the wrapper's own cost per call is measured beside the bare call.

    from hyperloom.tools.workload.overrides import replace
    replace("transformers.models.qwen2.modeling_qwen2:Qwen2RMSNorm.forward", lambda original: my_forward)
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable
from typing import Any

CALLS: dict[str, int] = {}
KERNELS: dict[str, list[str]] = {}  # target -> the device kernels its replacement launches (launches)
_ORIGINALS: dict[str, Any] = {}
OVERHEAD_CALLS = 2000


def replace(target: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace `target` ("module:Attr.path") by make(original), wrapped so that its calls are counted.

    Inside code torch.compile traces nothing is counted here: dynamo would guard on the count's value and compile the
    graph again at every call. A kernel there runs as a custom op, whose implementation counts with note_call when the
    compiled graph calls it (a CUDA/HIP graph replay runs no Python: its calls are the ones recorded)."""
    owner, attribute, original = resolve(target)
    replacement = make(original)
    CALLS[target] = 0
    _ORIGINALS[target] = original
    setattr(owner, attribute, functools.wraps(original)(_counting(CALLS, target, replacement)))


def _counting(counts: dict[str, int], key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, counting its calls in counts[key] outside code torch.compile traces (see replace); the one wrapper
    replace installs and wrapper_overhead_us times."""
    from torch.compiler import is_compiling  # a worker with overrides runs torch

    def counted(*args: Any, **kwargs: Any) -> Any:
        if not is_compiling():
            counts[key] += 1
        return function(*args, **kwargs)

    return counted


def note_call(target: str) -> None:
    """One call of `target`'s kernel made by compiled code (its custom op's implementation; see replace)."""
    CALLS[target] = CALLS.get(target, 0) + 1


def launches(target: str, names: list[str]) -> None:
    """The device kernels `target`'s replacement launches (its launcher's Triton functions, by name). A replayed
    CUDA/HIP graph runs them with no host call to count: engagement then finds them among the profiled step's kernels."""
    KERNELS[target] = sorted(set(names))


def kernel_names(launcher: Any) -> list[str]:
    """The device kernels a launcher module launches: its DEVICE_KERNELS when it lists them (a HIP/CUDA launcher),
    else its Triton functions (jit or, in Triton's interpreter, interpreted: both KernelInterface), by name."""
    listed = getattr(launcher, "DEVICE_KERNELS", None)
    if listed:
        return [str(name) for name in listed]
    return [name for name, value in vars(launcher).items() if any(cls.__name__ == "KernelInterface" for cls in type(value).__mro__)]


def kernels() -> dict[str, list[str]]:
    return {target: list(names) for target, names in KERNELS.items()}


def resolve(target: str) -> tuple[Any, str, Any]:
    """(the object holding the attribute, its name, its current value) for "module:Attr.path"."""
    module_name, _, path = target.partition(":")
    if not module_name or not path:
        raise ValueError(f"override target {target!r} is not 'module:Attr.path'")
    owner: Any = importlib.import_module(module_name)
    parts = path.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    if not hasattr(owner, parts[-1]):
        raise AttributeError(f"{target}: {type(owner).__name__} {getattr(owner, '__name__', '')} has no attribute {parts[-1]!r}")
    return owner, parts[-1], getattr(owner, parts[-1])


def calls() -> dict[str, int]:
    return dict(CALLS)


def wrapper_overhead_us() -> float:
    """What the counting wrapper adds to one call: the same no-op called through one and bare, side by side (µs)."""
    def bare(*args: Any, **kwargs: Any) -> None:
        return None

    counted = _counting({"n": 0}, "n", bare)
    best = []
    for function in (bare, counted, bare, counted):
        started = time.perf_counter()
        for _ in range(OVERHEAD_CALLS):
            function(1, k=2)
        best.append((time.perf_counter() - started) / OVERHEAD_CALLS)
    return max(0.0, (min(best[1], best[3]) - min(best[0], best[2])) * 1e6)
