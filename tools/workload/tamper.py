"""Worker side, defence in depth: whether the candidate's code replaced a function the worker's timing path calls.

The worker snapshots those functions before the overrides module is imported, and the workload's own step, outputs
and inputs as bound once it is built; after the build and after each timed leg it names every one that is no longer
the same object. The controller's clock is the real defence (a patch that keeps identities, a `__code__` swap, gets
past this); this names the plain patch outright.
"""

from __future__ import annotations

import sys
from types import FunctionType, ModuleType
from typing import Any

TIMING_PATH = (("time", "perf_counter"), ("time", "monotonic"), ("time", "perf_counter_ns"), ("numpy", "save"), ("numpy", "asarray"),
               ("numpy.lib.format", "write_array"), ("builtins", "open"),
               ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch", "from_numpy"))
"""(module, attribute) pairs the timed step reads, where the module is imported; np.save and what it calls write the
timed step's outputs after the controller's clock stopped (runner.save_timed), so a patch there could do work untimed."""
WORKER_MODULES = ("hyperloom.tools.workload.runner", "hyperloom.tools.workload.tamper", "hyperloom.core.worker_main", "hyperloom.core.warm_main",
                  "hyperloom.tools.workload.profiled_step", "hyperloom.tools.profile.kineto", "hyperloom.tools.workload.work")
"""Modules whose own functions (and the functions they imported by name) make up the worker's timing path and its
proof of work (a CPU step is weighed in the worker: profiled_step.profiled); imported before the snapshot (runner)."""

Snapshot = dict[str, Any]


def snapshot() -> Snapshot:
    """The timing path's functions as they are now: "module.attribute" -> the object."""
    taken: Snapshot = {}
    for module_name, attribute in TIMING_PATH:
        module = sys.modules.get(module_name)
        if module is not None and hasattr(module, attribute):
            taken[f"{module_name}.{attribute}"] = getattr(module, attribute)
    for module_name in WORKER_MODULES:
        module = sys.modules.get(module_name)
        if module is not None:
            taken.update({f"{module_name}.{name}": value for name, value in vars(module).items() if _is_code(value)})
    return taken


def methods(obj: Any, names: tuple[str, ...] = ("step", "outputs", "inputs")) -> Snapshot:
    """The workload object's methods as bound now: "workload.NAME" -> (function, self)."""
    return {f"workload.{name}": _bound(getattr(obj, name)) for name in names if callable(getattr(obj, name, None))}


def changed(before: Snapshot, now: Snapshot) -> list[str]:
    """The names in `before` whose object in `now` is another one (or is gone)."""
    return [name for name, value in before.items() if not _same(value, now.get(name, _GONE))]


def describe(names: list[str], when: str) -> str:
    """The refusal's reason: what changed, and when it was seen (e.g. "when its overrides module was imported")."""
    return (f"the candidate replaced what the worker's timing path calls, seen {when}: {', '.join(names[:6])}"
            + (f" and {len(names) - 6} more" if len(names) > 6 else ""))


_GONE = object()


def _is_code(value: Any) -> bool:
    return isinstance(value, FunctionType | type) and not isinstance(value, ModuleType)


def _bound(method: Any) -> tuple[Any, Any]:
    return (getattr(method, "__func__", method), getattr(method, "__self__", None))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2:
        return a[0] is b[0] and a[1] is b[1]
    return a is b
