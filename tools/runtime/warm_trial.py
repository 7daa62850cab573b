"""Inside a warm worker process: trials one after another, each run as a fresh process runs it
(tools/runtime/worker.run_payload, the same gpu.py and host.py), on what is worth keeping between them.

Kept: the interpreter and its imports, the GPU context, input arrays read from disk (host copies, keyed
by path, size and modification time) and, when the trial brings the helpers code object, device copies
checked after every trial that used them (tools/runtime/kept.py). Every trial still gets its inputs
copied into fresh device buffers. Not kept: every device allocation, code object and
event a trial makes is freed after it, so the next trial starts from the same device state a fresh
process would, less the context's start-up. A trial whose freeing fails is reported as an ERROR, and
the pool (tools/runtime/pool.py) replaces the process.
"""

from __future__ import annotations

import importlib
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.tools.runtime.affinity import bind_near
from hyperloom.tools.runtime.drivers import Driver
from hyperloom.tools.runtime.kept import DeviceInputs, Kept
from hyperloom.tools.runtime.gpu import load_input
from hyperloom.tools.runtime.models import TrialRequest
from hyperloom.tools.runtime.worker import run_payload as run_fresh

INPUT_CACHE_BYTES = 8 << 30
SPARE_SHARE = 0.25
"""Device memory a warm worker may hold between trials in buffers freed by one trial for the next (of the device's)."""


class TrackedDriver(Driver):
    """A Driver that remembers what a trial allocated, loaded and created, and gives it all back in release().

    Code objects are unloaded (their globals must not outlive the trial). Buffers and events are kept for the
    next trial instead of freed, up to SPARE_SHARE of the device's memory: every allocation and free goes through
    the kernel driver's locks, which two GPUs' workers would otherwise queue on. A kept buffer is as fresh as a new
    one to the next trial, which fills it before any kernel reads it (inputs copied in, outputs poisoned,
    scratch zeroed). An allocation the device refuses gets the kept buffers back first and is tried again."""

    def __init__(self, backend: str, device_index: int) -> None:
        super().__init__(backend, device_index)
        self._allocations: list[tuple[Any, int]] = []
        self._modules: list[Any] = []
        self._events: list[Any] = []
        self._spare: dict[int, list[Any]] = {}  # by size in bytes
        self._spare_events: list[Any] = []
        self._spare_bytes = 0
        self._spare_limit: int | None = None

    def malloc(self, nbytes: int) -> Any:
        size = max(nbytes, 1)
        if self._spare.get(size):
            pointer = self._spare[size].pop()
            self._spare_bytes -= size
        else:
            try:
                pointer = super().malloc(size)
            except RuntimeError:  # out of memory, perhaps because of what is kept: give it back and try once more
                self._free_spares()
                pointer = super().malloc(size)
        self._allocations.append((pointer, size))
        return pointer

    def load(self, image: bytes) -> Any:
        module = super().load(image)
        self._modules.append(module)
        return module

    def event(self) -> Any:
        event = self._spare_events.pop() if self._spare_events else super().event()
        self._events.append(event)
        return event

    def release(self) -> None:
        """Wait for the device, then keep or free every allocation and event of the trial and unload its code objects."""
        allocations, events, modules = self._allocations, self._events, self._modules
        self._allocations, self._events, self._modules = [], [], []
        self.synchronize()
        if self._spare_limit is None:
            self._spare_limit = int(self.total_bytes() * SPARE_SHARE)
        for pointer, size in allocations:
            if self._spare_bytes + size <= self._spare_limit:
                self._spare.setdefault(size, []).append(pointer)
                self._spare_bytes += size
            else:
                self.free(pointer)
        self._spare_events.extend(events)
        for module in modules:
            self.unload(module)

    def _free_spares(self) -> None:
        for pointers in self._spare.values():
            for pointer in pointers:
                self.free(pointer)
        self._spare, self._spare_bytes = {}, 0


class Reuse:
    """What this process keeps between trials (gpu.Reuse): one driver per backend and device, input arrays read
    from disk (pageable memory: page-locked memory is mapped into the GPU's address space, where a stray write of
    a kernel could reach it), and the device copies made from them (tools/runtime/kept.py)."""

    def __init__(self, cache_bytes: int = INPUT_CACHE_BYTES) -> None:
        self._drivers: dict[tuple[str, int], TrackedDriver] = {}
        self._inputs: OrderedDict[tuple[str, int, int, int], np.ndarray] = OrderedDict()
        self._cache_bytes, self._held_bytes = cache_bytes, 0
        self._device: dict[int, DeviceInputs | None] = {}  # per driver: its kept device copies (None: not available)

    def driver(self, request: TrialRequest) -> Driver:
        key = (request.backend, request.device_index)
        if key not in self._drivers:
            self._drivers[key] = TrackedDriver(*key)
        return self._drivers[key]

    def load(self, path: str) -> np.ndarray:
        key = _file_key(path)
        array = self._inputs.get(key)
        if array is not None:
            self._inputs.move_to_end(key)
            return array
        array = load_input(path)
        array.flags.writeable = False  # shared by the trials that read this file: nobody writes it
        self._inputs[key] = array
        self._held_bytes += array.nbytes
        while self._held_bytes > self._cache_bytes and len(self._inputs) > 1:
            _, dropped = self._inputs.popitem(last=False)
            self._held_bytes -= dropped.nbytes
        return array

    def kept(self, path: str, driver: Driver, helpers: str | None) -> Kept | None:
        """The device copy of the input file kept on `driver`'s GPU (tools/runtime/kept.py); None: copy it from the host."""
        inputs = self._device_inputs(driver, helpers)
        if inputs is None:
            return None
        return inputs.copy_of(_file_key(path), Path(path).stem.removeprefix("in_"), lambda: self.load(path))

    def changed_inputs(self) -> list[str]:
        """Kept device copies the last trial used that no longer match their checksum (dropped)."""
        return [name for inputs in self._device.values() if inputs is not None for name in inputs.changed()]

    def release(self) -> None:
        for driver in self._drivers.values():
            driver.release()

    def _device_inputs(self, driver: Driver, helpers: str | None) -> DeviceInputs | None:
        if helpers is None:
            return None
        if id(driver) not in self._device:
            try:
                self._device[id(driver)] = DeviceInputs(driver, helpers)
            except Exception:  # noqa: BLE001 - e.g. helpers built before the checksum existed: inputs come from the host
                self._device[id(driver)] = None
        return self._device[id(driver)]


def _file_key(path: str) -> tuple[str, int, int, int]:
    """An input file as it is now: a rewritten file is another key."""
    stat = os.stat(path)
    return (os.path.realpath(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)


_REUSE = Reuse()


def preload(payload: dict[str, Any]) -> dict[str, Any]:
    """The worker's first call: import the trial's modules and, for a GPU backend, open the context on device 0
    (the worker is pinned), so the first trial does not pay for them."""
    backend = payload.get("backend", "c")
    if backend not in ("cuda", "hip"):
        importlib.import_module("hyperloom.tools.runtime.host")
        return {"backend": backend}
    importlib.import_module("hyperloom.tools.gate.outputs")  # a GPU worker gates its own outputs
    driver = _REUSE.driver(TrialRequest(backend=backend, device_index=0, code_object="", entry="", args=[], mode="correctness"))
    cpus = bind_near(driver.pci_bus_id())  # before any input is read: its host copy lands on the GPU's node
    return {"backend": backend, "device": driver.name(), "cpus": cpus}


def run_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """One trial, as tools/runtime/worker.run_payload runs it in a fresh process, then everything it made on the device freed."""
    result = run_fresh(payload, _REUSE)
    try:
        changed = _REUSE.changed_inputs()
        _REUSE.release()
    except Exception as exc:  # noqa: BLE001 - a context that cannot free is not one to run the next trial in
        if result.get("status") == "OK":
            result = {**result, "status": "ERROR",
                      "message": f"the worker could not free the trial's device resources: {type(exc).__name__}: {exc}"}
        return result
    if changed and result.get("status") == "OK":
        result = {**result, "status": "ERROR",
                  "message": f"the kernel wrote outside its buffers: the worker's kept device copy of input(s) "
                  f"{', '.join(changed)} changed during this trial (its own inputs were intact; fix the out-of-bounds write)"}
    return result
