"""Worker side: a Triton kernel file imported and its entry unwrapped to the @triton.jit function.

Only worker processes import this module's callers' user code (hyperloom.core.worker); every failure
comes back as a structured error (kind, message, where) that the host side turns into a HyperloomError.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any


class EntryError(Exception):
    """A user-facing failure inside a worker: returned as {"error": {...}}, never a traceback."""

    def __init__(self, kind: str, message: str, where: str = "") -> None:
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where

    def payload(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "message": self.message[:2000], "where": self.where}}


def user_frame(exc: BaseException, source: str) -> str:
    """file:line of the innermost frame in the kernel's own folder (else the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    folder = str(Path(source).resolve().parent)
    mine = [f for f in frames if str(Path(f.filename).resolve()).startswith(folder)] or frames
    return f"{Path(mine[-1].filename).name}:{mine[-1].lineno}" if mine else ""


def load_module(source: str) -> ModuleType:
    """Import the kernel file (its folder first on sys.path, so modules beside it import by name)."""
    path = Path(source).resolve()
    sys.path.insert(0, str(path.parent))
    name = f"hyperloom_triton_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EntryError("import", f"{path.name} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling inside the kernel file look their module up here
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - user code: any ending is an import failure with its line
        if isinstance(exc, KeyboardInterrupt):
            raise
        shown = f"the code called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        raise EntryError("import", shown, user_frame(exc, source)) from None
    return module


def unwrap(module: ModuleType, entry: str) -> tuple[Any, list[Any]]:
    """(the @triton.jit function named `entry`, the autotune/heuristics wrappers around it, outermost first)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
        jit_types: tuple[type, ...] = (JITFunction, InterpretedFunction)
    except ImportError:  # a Triton without the interpreter module
        jit_types = (JITFunction,)
    if not hasattr(module, entry):
        found = sorted(name for name, value in vars(module).items() if isinstance(value, (*jit_types, Autotuner, Heuristics)))
        raise EntryError("entry", f"{Path(module.__file__ or '').name} has no {entry!r} (its @triton.jit functions: "
                                  f"{', '.join(found) or 'none'})")
    value, chain = getattr(module, entry), []
    while isinstance(value, (Autotuner, Heuristics)):
        chain.append(value)
        value = value.fn
    if not isinstance(value, jit_types):
        kind = "a plain Python function" if inspect.isfunction(value) else type(value).__name__
        raise EntryError("entry", f"{entry!r} is {kind}, not a @triton.jit function")
    return value, chain


def def_line(jit: Any) -> int:
    """The file line of the kernel's `def` (Triton numbers compile errors from it)."""
    function = jit.fn
    lines, first = inspect.getsourcelines(function)
    for offset, text in enumerate(lines):
        if text.lstrip().startswith("def "):
            return first + offset
    return first


def autotuner(chain: list[Any]) -> Any | None:
    from triton.runtime.autotuner import Autotuner

    return next((w for w in chain if isinstance(w, Autotuner)), None)


def heuristics(chain: list[Any]) -> dict[str, Any]:
    from triton.runtime.autotuner import Heuristics

    values: dict[str, Any] = {}
    for wrapper in reversed(chain):  # the innermost applies first, as Triton runs them
        if isinstance(wrapper, Heuristics):
            values.update(wrapper.values)
    return values


def apply_heuristics(chain: list[Any], values: dict[str, Any]) -> dict[str, Any]:
    """Constexprs an @triton.heuristics computes from the other arguments, computed as Triton would."""
    computed: dict[str, Any] = {}
    for name, function in heuristics(chain).items():
        try:
            computed[name] = function({**values, **computed})
        except Exception as exc:  # noqa: BLE001 - user code
            raise EntryError("heuristics", f"the @triton.heuristics value {name!r} failed: {type(exc).__name__}: {exc}") from None
    return computed
