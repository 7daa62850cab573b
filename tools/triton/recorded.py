"""Worker side: the launches a Triton launcher makes, recorded instead of run. The launcher is called on meta tensors
(shapes, dtypes and strides, no memory, no device); each `kernel[grid](...)` it reaches is kept as what an
ahead-of-time build of it takes (the kernel, its arguments as buffers and scalars, its constexprs and launch options),
and nothing is launched. So the launches a library kernel makes at a model's shapes are exactly the launcher's own
choices (tiles, splits, folds), built for any target without its device.

Triton's @triton.jit must not have been interpreted (TRITON_INTERPRET=1 when the kernel file was imported): an
interpreted function has no compiled launch to record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
"""Launch options a caller may pass beside the constexprs (Triton's CUDA and HIP backends)."""


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Within the block every JITFunction launch is appended to the yielded list (as `launch` gives it), not run."""
    from triton.runtime.jit import JITFunction

    seen: list[dict[str, Any]] = []
    original = JITFunction.run

    def record(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> None:
        seen.append(launch(self, args, kwargs))

    JITFunction.run = record
    try:
        yield seen
    finally:
        JITFunction.run = original


def recorded(call: Callable[[], Any]) -> list[dict[str, Any]]:
    """The launches `call` makes (a launcher called on meta tensors), in order, none run."""
    with recording() as seen:
        call()
    return seen


def launch(jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """One launch as a build takes it: the kernel's file and name, its non-constexpr arguments in order (a tensor as a
    buffer of its dtype and storage bytes, a number as a scalar), its constexprs and options."""
    import inspect

    params = list(jit.params)
    named = dict(zip([p.name for p in params], args, strict=False)) | kwargs
    missing = [p.name for p in params if p.name not in named and not p.has_default]
    if missing:
        raise ValueError(f"{jit.fn.__name__} launched without {', '.join(missing)}")
    arguments, constexprs = [], {}
    for param in params:
        value = named.get(param.name, param.default if param.has_default else None)
        if param.is_constexpr:
            constexprs[param.name] = value
        else:
            arguments.append(_argument(param.name, value))
    return {"source": inspect.getsourcefile(jit.fn), "entry": jit.fn.__name__, "args": arguments, "constexprs": constexprs,
            "options": {k: int(v) for k, v in kwargs.items() if k in OPTIONS}}


def _argument(name: str, value: Any) -> dict[str, Any]:
    """A buffer (a tensor: its dtype as the specs name it, the bytes of its storage) or a scalar (its value, typed)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"name": name, "kind": "buffer", "dtype": str(value.dtype).removeprefix("torch."),
                "nbytes": int(value.untyped_storage().nbytes())}
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"argument {name} is {type(value).__name__}: a recorded launch takes tensors and numbers")
    if isinstance(value, float):
        return {"name": name, "kind": "scalar", "dtype": "float32", "value": value}
    return {"name": name, "kind": "scalar", "dtype": "int32" if -(1 << 31) <= value < (1 << 31) else "int64", "value": value}
