"""Library kernels routed into a model (the `kernel` levers: decode_attention, decode_gemv), worker side: what the
routes share. Each route (a module of this package) marks or rewires its part of the model (`route(torch, model)`,
what it routed and, when nothing, why), sends each call the kernel covers to a torch custom op (one opaque node to
torch.compile, a launch a CUDA/HIP graph captures and replays) and any other call to torch's own code, counting the
kernel's host calls and each fallback's reason (`COUNTS`); the reasons it falls back by design (a prefill's
attention, a GEMM's many rows) are its `EXPECTED` ones, not a failure of the lever.

On a GPU a route first launches the kernel once at the model's own shapes (`unbuilt`): a kernel Triton cannot build or
launch on this device (an AMD target its code does not compile for, a Triton that refuses it) routes nothing and says
why, so the lever is NO_OP there with the reason rather than a step that raises.
"""

from __future__ import annotations

import importlib
import os
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

ROUTES = {"decode_attention": "hyperloom.tools.workload.worker.levers.decode_attention",
          "decode_gemv": "hyperloom.tools.workload.worker.levers.decode_gemv"}
_LAUNCHERS: dict[str, ModuleType] = {}


class Counts:
    """The kernel's host calls (its op executed: eager, or compiled code outside a replayed graph) and the calls sent
    back to torch's code, by reason; counted outside compiled tracing only."""

    def __init__(self) -> None:
        self.kernel = 0
        self.fallbacks: Counter[str] = Counter()

    def fell_back(self, why: str) -> None:
        import torch

        if not torch.compiler.is_compiling():
            self.fallbacks[why] += 1

    def snapshot(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "fallbacks": dict(self.fallbacks)}

    def since(self, before: dict[str, Any]) -> dict[str, Any]:
        earlier = before["fallbacks"]
        return {"kernel": self.kernel - before["kernel"],
                "fallbacks": {why: n - earlier.get(why, 0) for why, n in self.fallbacks.items() if n > earlier.get(why, 0)}}


def launcher(torch: Any, kernel: str) -> ModuleType:
    """The library kernel's launcher module (kernels/triton/KERNEL/KERNEL.py), loaded once a process; on a CPU under
    Triton's interpreter (tests: it must be on before triton is first imported)."""
    if kernel not in _LAUNCHERS:
        if not torch.cuda.is_available():
            os.environ.setdefault("TRITON_INTERPRET", "1")
        from hyperloom.core.shipped import shipped_kernels
        from hyperloom.tools.triton.entry import load_module

        _LAUNCHERS[kernel] = load_module(str(shipped_kernels("triton", kernel, f"{kernel}.py")))
    return _LAUNCHERS[kernel]


def counted_op(torch: Any, name: str, schema: str, counts: Counts, run: Callable[..., Any], fake: Callable[..., Any]) -> Any:
    """`run` as the torch custom op `name` (one opaque node to torch.compile; a CUDA/HIP graph captures its launch),
    each host call counted in `counts`; `fake` gives its output's shape and dtype to the compiler."""
    def kernel(*args: Any) -> Any:
        counts.kernel += 1
        return run(*args)

    op = torch.library.custom_op(name, kernel, mutates_args=(), schema=schema)
    op.register_fake(fake)
    return op


PROBED_ON = ("cuda",)
"""Device types whose route probes its launches (ROCm's torch calls its GPUs cuda too); the CPU interpreter builds nothing."""


def unbuilt(torch: Any, device: Any, probes: list[tuple[str, Callable[[], Any]]]) -> str:
    """Why the kernel does not build or launch on `device` (the first failing probe: a label and a call of the launcher
    on zeros at the model's shapes, compiled as the step would compile it), or empty; nothing is probed off a GPU."""
    if device.type not in PROBED_ON:
        return ""
    for label, call in probes:
        try:
            call()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        except Exception as exc:  # noqa: BLE001 - Triton's compile and launch errors: the lever's reason, not a crash
            said = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
            return f"the kernel did not build or launch on {_device_said(torch, device)} ({label}): {type(exc).__name__}: {said[:300]}"
    return ""


def _device_said(torch: Any, device: Any) -> str:
    """The device as a reader names it: its name and, on ROCm, its gfx target."""
    if device.type != "cuda":
        return device.type
    properties = torch.cuda.get_device_properties(device)
    arch = getattr(properties, "gcnArchName", "")
    return f"{properties.name} ({arch})" if arch else properties.name


def route_module(value: str) -> ModuleType:
    return importlib.import_module(ROUTES[value])


def snapshots(values: list[str]) -> dict[str, dict[str, Any]]:
    """The counts of the routes `values` now (before a profiled step)."""
    return {value: route_module(value).COUNTS.snapshot() for value in values}


def evidence(value: str, routed: dict[str, Any], before: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What one profiled step shows of a route: what it routed, the kernel's host calls and fallbacks since `before`,
    the reasons it falls back by design, and the device kernels it launches (what a replayed graph's profile shows)."""
    module = route_module(value)
    counted = module.COUNTS.since(before.get(value, {"kernel": 0, "fallbacks": {}}))
    return {**routed, **counted, "expected": list(module.EXPECTED), "kernels": list(module.KERNELS)}
