"""Worker side, defence in depth: whether the candidate's code replaced a function the worker's timing path calls.

The worker snapshots those functions before the overrides module is imported, and the workload's own step, outputs
and inputs as bound once it is built; after the build and after each timed leg it names every one that is no longer
the same object running the same code (a `__code__` swap keeps the object). A timed window's figure is the worker's
(window.py), so this is a first line; the controller's clock around each call bounds what it can hide (timed.py).
"""

from __future__ import annotations

import sys
from types import FunctionType, ModuleType
from typing import Any

TIMING_PATH = (("time", "perf_counter"), ("time", "monotonic"), ("time", "perf_counter_ns"), ("numpy", "save"), ("numpy", "asarray"),
               ("numpy.lib.format", "write_array"), ("builtins", "open"),
               ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "Event.record"), ("torch.cuda", "Event.elapsed_time"),
               ("torch._C", "_CudaEventBase.record"), ("torch._C", "_CudaEventBase.elapsed_time"), ("torch", "from_numpy"))
"""(module, attribute path) pairs the timed window reads, where the module is imported; np.save and what it calls write
a timed step's outputs after the controller's clock stopped (runner.save_timed), so a patch there could do work untimed."""
WORKER_MODULES = ("hyperloom.tools.workload.worker.runner", "hyperloom.tools.workload.worker.window",
                  "hyperloom.tools.workload.worker.calls", "hyperloom.tools.workload.worker.tamper", "hyperloom.core.worker_main",
                  "hyperloom.core.warm_main", "hyperloom.tools.workload.worker.profiled_step", "hyperloom.tools.profile.kineto",
                  "hyperloom.tools.workload.work")
"""Modules whose own functions (and the functions they imported by name) make up the worker's timing path and its
proof of work (a CPU step is weighed in the worker: profiled_step.profiled); imported before the snapshot (runner)."""

Snapshot = dict[str, Any]


def snapshot() -> Snapshot:
    """The timing path's functions as they are now: "module.attribute" -> the object."""
    taken: Snapshot = {}
    for module_name, path in TIMING_PATH:
        found = _resolved(sys.modules.get(module_name), path)
        if found is not _GONE:
            taken[f"{module_name}.{path}"] = _fingerprint(found)
    for module_name in WORKER_MODULES:
        module = sys.modules.get(module_name)
        if module is not None:
            taken.update({f"{module_name}.{name}": _fingerprint(value) for name, value in vars(module).items() if _is_code(value)})
    return taken


def methods(obj: Any, names: tuple[str, ...] = ("step", "outputs", "inputs")) -> Snapshot:
    """The workload object's methods as bound now: "workload.NAME" -> (function, self)."""
    return {f"workload.{name}": bound(getattr(obj, name)) for name in names if callable(getattr(obj, name, None))}


def changed(before: Snapshot, now: Snapshot) -> list[str]:
    """The names in `before` whose object in `now` is another one (or is gone)."""
    return [name for name, value in before.items() if not _same(value, now.get(name, _GONE))]


_GONE = object()


def _is_code(value: Any) -> bool:
    return isinstance(value, FunctionType | type) and not isinstance(value, ModuleType)


def _resolved(module: Any, path: str) -> Any:
    """`module`'s attribute at the dotted `path` (a class's method: "Event.record"), or _GONE."""
    value = module if module is not None else _GONE
    for part in path.split("."):
        value = getattr(value, part, _GONE) if value is not _GONE else _GONE
    return value


def _fingerprint(value: Any) -> tuple[Any, ...]:
    """What must stay the same: the object, and a function's code (swapped in place, it keeps the object)."""
    return (value, getattr(value, "__code__", None))


def bound(method: Any) -> tuple[Any, ...]:
    """A bound method's fingerprint: its function, what it is bound to, and the function's code."""
    function = getattr(method, "__func__", method)
    return (function, getattr(method, "__self__", None), getattr(function, "__code__", None))


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
