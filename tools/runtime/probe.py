"""Can this machine run a backend? Asked once, before any input is drawn or candidate compiled.

The GPU backends need their Python bindings (cuda-python, hip-python), a driver and a device of
that kind at the index asked for. The question is asked in a worker process (the driver is
initialized there, never in the server) and a positive answer is remembered for the process.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.toolchain import find_tool
from hyperloom.core.worker import run_worker

PROBE_TIMEOUT_S = 60.0
INSTALL = {
    "cuda": "pip install cuda-python (and an NVIDIA driver; `hyperloom detect` checks it)",
    "hip": "pip install hip-python matching your ROCm (and ROCm's runtime; `hyperloom detect` checks it)",
    "c": "apt-get install gcc (the system C compiler builds host twins)",
    "triton_interpreter": "pip install 'hyperloom[triton]' torch (Triton's interpreter runs a kernel's math on the CPU with torch tensors)",
}


@dataclass(frozen=True)
class Readiness:
    can_run: bool
    reason: str


_ready: dict[tuple[str, int], Readiness] = {}
_lock = threading.Lock()


def backend_readiness(backend: str, device: int = 0) -> Readiness:
    """Whether `backend` can run on device `device` here, and why not."""
    if backend == "triton_interpreter":
        missing = [name for name in ("triton", "torch") if importlib.util.find_spec(name) is None]
        return Readiness(not missing, f"{' and '.join(missing)} not installed: {INSTALL[backend]}" if missing
                                      else "Triton's interpreter (CPU; the gate only, no kernel timings)")
    if backend == "c":
        cc = find_tool("cc", version_timeout_s=None)
        return Readiness(True, f"host C compiler at {cc.path}") if cc.path else Readiness(False, f"no C compiler: {INSTALL['c']}")
    with _lock:
        if (backend, device) in _ready:
            return _ready[(backend, device)]
    outcome = run_worker("hyperloom.tools.runtime.probe:probe", {"backend": backend, "device": device}, timeout_s=PROBE_TIMEOUT_S)
    if not outcome.ok:
        return Readiness(False, f"the {backend} runtime could not be asked for devices: {outcome.describe()}")
    answer = Readiness(bool(outcome.result["can_run"]), str(outcome.result["reason"]))
    if answer.can_run:
        with _lock:
            _ready[(backend, device)] = answer
    return answer


def require_backend(backend: str, target: str, device: int = 0) -> None:
    """One clear error, before any work, when `target` cannot run here."""
    ready = backend_readiness(backend, device)
    if not ready.can_run:
        raise HyperloomError(
            f"{target} cannot run on this machine: {ready.reason}",
            f"{INSTALL[backend]}; or compile and verify offline (compile_kernel, disasm_verify, spec_check) and run on a machine "
            "with that GPU",
        )


def probe(payload: dict[str, Any]) -> dict[str, Any]:
    """In the worker: import the bindings, initialize the driver, count devices, name the one asked for."""
    backend, device = payload["backend"], int(payload["device"])
    try:
        if backend == "cuda":
            from cuda.bindings import driver as api

            init, count, get, name = api.cuInit, api.cuDeviceGetCount, api.cuDeviceGet, api.cuDeviceGetName
        else:
            from hip import hip as api

            init, count, get, name = api.hipInit, api.hipGetDeviceCount, api.hipDeviceGet, api.hipDeviceGetName
    except ImportError as exc:
        return {"can_run": False, "reason": f"the {backend} bindings are not installed ({exc}): {INSTALL[backend]}"}
    status = _status(init(0))
    if status:
        return {"can_run": False, "reason": f"the {backend} driver did not initialize ({status}); check the driver with `hyperloom detect`"}
    returned = count()
    status, devices = _status(returned), int(returned[1]) if isinstance(returned, tuple) else 0
    if status or devices == 0:
        return {"can_run": False, "reason": f"no {backend} device is visible ({status or '0 devices'})"}
    if device >= devices:
        return {"can_run": False, "reason": f"device {device} asked for, but {devices} {backend} device(s) are visible (0..{devices - 1})"}
    handle = get(device)[1]
    raw = name(256, handle)[1]
    label = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes | bytearray) else str(raw)
    return {"can_run": True, "reason": f"{backend} device {device}: {label}"}


def _status(returned: Any) -> str:
    """'' when a binding call succeeded, else its status' name."""
    status = returned[0] if isinstance(returned, tuple) else returned
    return "" if int(status) == 0 else repr(status)
