"""One trial on a GPU through `Driver`: identical for CUDA and HIP."""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np

from hyperloom.tools.runtime.drivers import Driver, KernelParams
from hyperloom.tools.runtime.models import ArgSpec, TrialRequest, TrialResult
from hyperloom.tools.runtime.sampling import sample

MIN_FLUSH_BYTES = 64 << 20
POISON_BYTE = 0xFF  # all-ones: NaN for every float width, -1 for signed integers
FLUSH_ENTRY, FLUSH_BLOCKS, FLUSH_THREADS = "hyperloom_flush_read", 2048, 256  # kernels/runtime/flush_read.hip, grid-stride
FLUSH_PROBES = 5
LATE_FRACTION = 0.8  # a rep whose enqueue took longer than this share of a flush may have timed the host

_SCALARS = {
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}


def scalar(arg: ArgSpec) -> ctypes._SimpleCData:
    return _SCALARS[arg.dtype](arg.value)


def run_gpu(request: TrialRequest) -> TrialResult:
    driver = Driver(request.backend, request.device_index)
    module = driver.load(Path(request.code_object).read_bytes())
    function = driver.function(module, request.entry)
    buffers: dict[str, object] = {}
    values: list[ctypes._SimpleCData] = []
    for arg in request.args:
        if arg.kind == "scalar":
            values.append(scalar(arg))
            continue
        pointer = driver.malloc(arg.nbytes)
        buffers[arg.name] = pointer
        values.append(ctypes.c_uint64(int(pointer)))
        if arg.input_path:
            host = np.ascontiguousarray(np.load(arg.input_path, allow_pickle=False))
            driver.htod(pointer, host.ctypes.data, host.nbytes)
        else:
            driver.memset(pointer, POISON_BYTE, arg.nbytes)
    params = KernelParams(values)
    launch = lambda: driver.launch(function, _dims(request.grid), _dims(request.block), request.shared_bytes, params)  # noqa: E731
    result = TrialResult(status="OK", device=driver.name())

    if request.mode == "correctness":
        launch()
        driver.synchronize()
        for arg in request.args:
            if arg.kind == "buffer" and arg.output_path:
                host = np.empty(arg.shape, dtype=arg.dtype)
                driver.dtoh(host.ctypes.data, buffers[arg.name], host.nbytes)
                np.save(arg.output_path, host)
        return result

    result.cache_bytes = driver.l2_bytes()
    flush_bytes = max(2 * result.cache_bytes, MIN_FLUSH_BYTES) if request.timing.flush_cache else 0
    flush = driver.malloc(flush_bytes) if flush_bytes else None
    read_flush = _read_flush(driver, request, flush, flush_bytes) if flush is not None and request.timing.flush_mode == "read" else None
    counter = [0]

    def flush_cache() -> None:  # enqueue only; the stream orders it before what follows
        if read_flush is not None:  # read the flush buffer: the cache holds its clean lines, none of the kernel's
            read_flush()
        elif flush is not None:  # overwrite the last-level cache, so no rep finds its data there
            counter[0] += 1
            driver.memset(flush, counter[0] & 0xFF, flush_bytes)

    start, end = driver.event(), driver.event()
    flush_s = _flush_seconds(driver, flush_cache, start, end) if flush is not None else 0.0

    def one_rep() -> tuple[float, float]:
        # Kernel time: the start event, the kernel and the end event are enqueued behind the flush while the
        # device still runs it, so the events bracket the kernel alone. Recording start on an idle device and
        # then launching would put the host's launch latency (microseconds) inside the measurement.
        enqueue_began = time.perf_counter()
        flush_cache()
        driver.record(start)
        launch()
        driver.record(end)
        if time.perf_counter() - enqueue_began > LATE_FRACTION * flush_s:
            result.late_reps += 1  # the device may have reached `start` before the launch arrived
        driver.wait(end)
        kernel_s = driver.elapsed_ms(start, end) / 1e3
        # Wall time: what a caller waiting on one launch sees, launch latency included (cache flushed again).
        flush_cache()
        driver.synchronize()
        t0 = time.perf_counter()
        launch()
        driver.synchronize()
        return kernel_s, time.perf_counter() - t0

    result.kernel_s, result.wall_s, result.warmup_reps = sample(one_rep, request.timing)
    result.flush_bytes = flush_bytes
    return result


def _flush_seconds(driver: Driver, flush_cache, start: object, end: object) -> float:  # type: ignore[no-untyped-def]
    """The shortest of a few timed flushes: how long the host has to enqueue a rep's events and launch behind one."""
    seconds = []
    for _ in range(FLUSH_PROBES):
        driver.synchronize()
        driver.record(start)
        flush_cache()
        driver.record(end)
        driver.wait(end)
        seconds.append(driver.elapsed_ms(start, end) / 1e3)
    return min(seconds)


def _read_flush(driver: Driver, request: TrialRequest, flush: object, flush_bytes: int):  # type: ignore[no-untyped-def]
    """A call that reads the whole flush buffer with kernels/runtime/flush_read.hip."""
    if request.flush_code_object is None:
        raise RuntimeError("flush_mode read on a GPU needs flush_code_object (bench builds it)")
    function = driver.function(driver.load(Path(request.flush_code_object).read_bytes()), FLUSH_ENTRY)
    driver.memset(flush, 0, flush_bytes)  # written once, so every later read finds defined bytes
    sink = driver.malloc(4)
    params = KernelParams([ctypes.c_uint64(int(flush)), ctypes.c_int64(flush_bytes // 16), ctypes.c_uint64(int(sink))])
    return lambda: driver.launch(function, [FLUSH_BLOCKS, 1, 1], [FLUSH_THREADS, 1, 1], 0, params)


def _dims(values: list[int]) -> list[int]:
    return (list(values) + [1, 1, 1])[:3]
