"""Launch a @triton.jit kernel through its compiled kernel's own launcher, without Triton's Python binder.

`kernel[grid](*args)` binds the arguments, computes the specialization key and looks the compiled kernel up on every
call: 28-49 µs of host time a call on the lent H200's host (lab/device-runs/launch_cost.py), where eager torch takes
about 9 µs an op. Decode at batch one is bound by such host time, so a fused kernel that replaces eight eager launches
with one can still lose.

`PreboundKernel` keeps, per specialization (the current device, each tensor's dtype and 16-byte alignment, each
integer's value, the constexprs and options), the kernel the first call compiled through `kernel[grid]`, and launches
later calls with `CompiledKernel.run` directly, with no launch hooks when none are registered. A call whose
specialization was not seen goes through the binder once; under Triton's interpreter every call does."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

ALIGNMENT_BYTES = 16  # Triton specializes a pointer on whether it is divisible by 16


def _argument_key(value: Any) -> object:
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is not None:
        return (value.dtype, data_ptr() % ALIGNMENT_BYTES == 0)
    if isinstance(value, bool | int):
        return (type(value), value)  # Triton specializes integers on 1 and on divisibility by 16: the value decides both
    return type(value)


def _registered(hook: Any) -> bool:
    """Whether a launch hook would call anything: Triton >= 3.5 keeps a HookChain (its `calls`), older a callable."""
    return bool(getattr(hook, "calls", hook))


class PreboundKernel:
    """One @triton.jit function, launched by the compiled kernel of each specialization it has met."""

    def __init__(self, function: Any) -> None:
        from triton import knobs  # Triton >= 3.4: what JITFunction.run hands the launcher, in the same order
        from triton.runtime.driver import driver
        from triton.runtime.interpreter import InterpretedFunction

        self.function, self.knobs, self.driver = function, knobs, driver
        self.interpreted = isinstance(function, InterpretedFunction)  # no GPU driver to ask, no compiled kernel to keep
        self.compiled: dict[tuple, Any] = {}
        self.arg_names: tuple[str, ...] = tuple(function.arg_names)
        self.defaults = {p.name: p.default for p in inspect.signature(function.fn).parameters.values()
                         if p.default is not inspect.Parameter.empty}

    def __call__(self, grid: tuple[int, ...], args: tuple, meta: Mapping[str, Any]) -> None:
        """Launch over `grid` with the positional runtime `args` and `meta` (the constexprs by name, and options such
        as num_warps); the constexprs are those the kernel's signature names after the runtime arguments."""
        if self.interpreted:
            self.function[grid](*args, **meta)
            return
        active = self.driver.active
        device = active.get_current_device()
        key = (device, tuple(_argument_key(a) for a in args), tuple(meta.items()), len(grid))
        compiled = self.compiled.get(key)
        if compiled is None:  # the first call of its kind
            self.compiled[key] = self.function[grid](*args, **meta)
            return
        stream = active.get_current_stream(device)
        every = (*args, *(meta[n] if n in meta else self.defaults[n] for n in self.arg_names[len(args):]))
        grid_x, grid_y, grid_z = (*grid, 1, 1)[:3]
        hooks = self.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        if _registered(enter) or _registered(leave):  # a profiler listens: hand it what JITFunction.run would
            compiled.run(grid_x, grid_y, grid_z, stream, compiled.function, compiled.packed_metadata,
                         compiled.launch_metadata(grid, stream, *every), enter, leave, *every)
        else:
            compiled.run(grid_x, grid_y, grid_z, stream, compiled.function, compiled.packed_metadata, None, None, None,
                         *every)
