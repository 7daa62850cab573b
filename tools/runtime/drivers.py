"""The GPU driver APIs behind one interface: CUDA's driver API (cuda-python) and HIP's module API
(hip-python), which mirrors it call for call. Only the bindings differ; everything above this
module is shared, so what runs on an NVIDIA GPU also exercises the AMD path."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from hyperloom.core.errors import HyperloomError


@dataclass(frozen=True)
class Names:
    """The vendor's name for each generic call."""

    init: str
    device_get: str
    device_name: str
    attribute: str
    l2_attribute: str
    module_load: str
    module_function: str
    malloc: str
    free: str
    htod: str
    dtoh: str
    memset: str
    launch: str
    event_create: str
    event_record: str
    event_sync: str
    event_elapsed: str
    synchronize: str
    pci_bus_id: str
    dtod: str
    total_memory: str
    module_unload: str


CUDA = Names(
    "cuInit", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute", "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE",
    "cuModuleLoadData", "cuModuleGetFunction", "cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuMemcpyDtoH",
    "cuMemsetD8", "cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
    "cuCtxSynchronize", "cuDeviceGetPCIBusId", "cuMemcpyDtoD",
    "cuDeviceTotalMem", "cuModuleUnload",
)
HIP = Names(
    "hipInit", "hipDeviceGet", "hipDeviceGetName", "hipDeviceGetAttribute", "hipDeviceAttributeL2CacheSize",
    "hipModuleLoadData", "hipModuleGetFunction", "hipMalloc", "hipFree", "hipMemcpyHtoD", "hipMemcpyDtoH",
    "hipMemsetD8", "hipModuleLaunchKernel", "hipEventCreate", "hipEventRecord", "hipEventSynchronize",
    "hipEventElapsedTime", "hipDeviceSynchronize", "hipDeviceGetPCIBusId", "hipMemcpyDtoD",
    "hipDeviceTotalMem", "hipModuleUnload",
)


def _bindings(backend: str) -> tuple[Any, Any, Names]:
    """(module, attribute enum, names) for the backend; a clear error when its bindings are missing."""
    try:
        if backend == "cuda":
            from cuda.bindings import driver as module

            return module, module.CUdevice_attribute, CUDA
        from hip import hip as module  # hip-python

        return module, module.hipDeviceAttribute_t, HIP
    except ImportError as exc:
        package = "cuda-python (pip install cuda-python)" if backend == "cuda" else ("hip-python (pip install hip-python, "
                                                                                     "matching your ROCm)")
        raise HyperloomError(f"the {backend} backend needs {package}: {exc}", f"install {package}") from exc


CUDA_DEFAULT_SHARED_BYTES = 48 << 10  # dynamic shared memory a CUDA launch gets without opting in

_FAULTS = ("ILLEGAL_ADDRESS", "LAUNCH_FAILED", "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "INVALID_PC",
           "HARDWARE_STACK_ERROR", "ASSERT", "IllegalAddress", "LaunchFailure", "IllegalState")


class DeviceFault(RuntimeError):
    """The GPU faulted while running a kernel (illegal address, launch failure, …): a crash of the trial."""


class Driver:
    """One GPU, driven through its vendor's bindings with identical calls."""

    def __init__(self, backend: str, device_index: int) -> None:
        self.backend = backend
        self.module, self.attributes, self.names = _bindings(backend)
        self._call("init", 0)
        self.device = self._call("device_get", device_index)
        if backend == "cuda":  # the driver API needs a current context: use the device's primary one
            context = self._check(self.module.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
            self._check(self.module.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        else:
            self._check(self.module.hipSetDevice(device_index), "hipSetDevice")

    # -- plumbing
    def _check(self, returned: Any, what: str) -> Any:
        result = returned if isinstance(returned, tuple) else (returned,)
        status, values = result[0], result[1:]
        if int(status) != 0:
            kind = DeviceFault if any(fault in repr(status) for fault in _FAULTS) else RuntimeError
            raise kind(f"{what} failed: {status!r}")
        return values[0] if len(values) == 1 else values

    def _call(self, generic: str, *args: Any) -> Any:
        name = getattr(self.names, generic)
        return self._check(getattr(self.module, name)(*args), name)

    # -- device facts
    def name(self) -> str:
        raw = self._call("device_name", 256, self.device)
        if isinstance(raw, bytes | bytearray):
            return raw.split(b"\0", 1)[0].decode(errors="replace")
        return str(raw)

    def pci_bus_id(self) -> str | None:
        """The device's PCI address ('0000:1b:00.0'), or None when the bindings do not say."""
        try:
            raw = self._call("pci_bus_id", 32, self.device)
        except (RuntimeError, TypeError, AttributeError):
            return None
        text = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes | bytearray) else str(raw)
        return text.strip() or None

    def l2_bytes(self) -> int:
        return int(self._call("attribute", getattr(self.attributes, self.names.l2_attribute), self.device))

    # -- code
    def load(self, image: bytes) -> Any:
        return self._call("module_load", image)

    def unload(self, module: Any) -> None:
        self._call("module_unload", module)

    def function(self, module: Any, name: str) -> Any:
        return self._call("module_function", module, name.encode())

    def allow_shared(self, function: Any, shared_bytes: int) -> None:
        """Let `function` launch with `shared_bytes` of dynamic shared memory. CUDA launches get 48 KB unless the
        function opts in to more (up to the device's per-block limit); AMD has no such opt-in: a launch may use
        the LDS the device has, so there is nothing to set."""
        if self.backend == "cuda" and shared_bytes > CUDA_DEFAULT_SHARED_BYTES:
            attribute = self.module.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._check(self.module.cuFuncSetAttribute(function, attribute, shared_bytes), "cuFuncSetAttribute")

    # -- memory
    def malloc(self, nbytes: int) -> Any:
        return self._call("malloc", max(nbytes, 1))

    def offset(self, pointer: Any, nbytes: int) -> Any:
        """The device address `nbytes` past `pointer`, of the bindings' pointer type where it takes an integer."""
        address = int(pointer) + nbytes
        try:
            return type(pointer)(address)
        except TypeError:
            return address

    def free(self, pointer: Any) -> None:
        self._call("free", pointer)

    def htod(self, pointer: Any, host_address: int, nbytes: int) -> None:
        self._call("htod", pointer, host_address, nbytes)

    def dtod(self, destination: Any, source: Any, nbytes: int) -> None:
        self._call("dtod", destination, source, nbytes)

    def total_bytes(self) -> int:
        return int(self._call("total_memory", self.device))

    def dtoh(self, host_address: int, pointer: Any, nbytes: int) -> None:
        self._call("dtoh", host_address, pointer, nbytes)

    def memset(self, pointer: Any, byte: int, nbytes: int) -> None:
        self._call("memset", pointer, byte, nbytes)

    # -- launch and time
    def launch(self, function: Any, grid: list[int], block: list[int], shared_bytes: int, params: KernelParams, stream: int = 0) -> None:
        """Launch on `stream` (a CUstream / hipStream_t handle; 0 is the device's default stream)."""
        self._call("launch", function, *grid, *block, shared_bytes, stream, params.address, 0)

    def event(self) -> Any:
        return self._call("event_create", 0)

    def record(self, event: Any) -> None:
        self._call("event_record", event, 0)

    def wait(self, event: Any) -> None:
        self._call("event_sync", event)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self._call("event_elapsed", start, end))

    def synchronize(self) -> None:
        self._call("synchronize")


class KernelParams:
    """The `void*[]` a launch takes: one pointer per argument, each to a ctypes value holding it."""

    def __init__(self, values: list[ctypes._SimpleCData]) -> None:
        self._values = values  # kept alive as long as the array points at them
        self._array = (ctypes.c_void_p * max(len(values), 1))(*(ctypes.addressof(v) for v in values))

    @property
    def address(self) -> int:
        return ctypes.addressof(self._array)
