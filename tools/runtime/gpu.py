"""One trial on a GPU through `Driver`: identical for CUDA and HIP."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from hyperloom.tools.runtime.drivers import Driver, KernelParams
from hyperloom.tools.runtime.kept import Kept
from hyperloom.tools.runtime.models import ArgSpec, TrialRequest, TrialResult
from hyperloom.tools.runtime.sampling import sample

MIN_FLUSH_BYTES = 64 << 20
POISON_BYTE = 0xFF  # all-ones: NaN for every float width, -1 for signed integers


def fill_byte(arg: ArgSpec) -> int:
    """What a buffer with no input starts as: outputs are poisoned (a value the kernel never wrote shows as NaN),
    scratch is zeroed (the state a workspace's counters and partial sums start from)."""
    return 0 if arg.role == "scratch" else POISON_BYTE

FLUSH_ENTRY, FLUSH_BLOCKS, FLUSH_THREADS = "hyperloom_flush_read", 2048, 256  # kernels/runtime/timing.hip, grid-stride
SPIN_ENTRY, SPIN_NS = "hyperloom_spin", 50_000  # longer than the host takes to enqueue a rep (events and a launch)
HEAD_START_PROBES = 5
LATE_FRACTION = 0.8  # a rep whose enqueue took longer than this share of the flush and spin may have timed the host

_SCALARS = {
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}


def scalar(arg: ArgSpec) -> ctypes._SimpleCData:
    return _SCALARS[arg.dtype](arg.value)


def load_input(path: str) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def upload(driver: Driver, args: list[ArgSpec], load: Callable[[str], np.ndarray] = load_input,
           kept: Callable[[str], Kept | None] | None = None) -> tuple[dict[str, object], KernelParams]:
    """A launch's device buffers by name (inputs copied in, outputs poisoned, scratch zeroed) and its parameters.
    `kept`: a warm worker's device copy of an input file, copied from on the device (None: from the host)."""
    buffers: dict[str, object] = {}
    values: list[ctypes._SimpleCData] = []
    for arg in args:
        if arg.kind == "scalar":
            values.append(scalar(arg))
            continue
        pointer = driver.malloc(arg.nbytes)
        buffers[arg.name] = pointer
        values.append(ctypes.c_uint64(int(pointer)))
        if arg.input_path and kept is not None and (copy := kept(arg.input_path)) is not None:
            driver.dtod(pointer, copy.pointer, copy.nbytes)
        elif arg.input_path:
            host = np.ascontiguousarray(load(arg.input_path))
            driver.htod(pointer, host.ctypes.data, host.nbytes)
        else:
            driver.memset(pointer, fill_byte(arg), arg.nbytes)
    return buffers, KernelParams(values)


def dims(sizes: list[int]) -> list[int]:
    """A grid or block as the three sizes a launch takes."""
    return [*sizes, 1, 1][:3]


class Reuse(Protocol):
    """What a warm worker keeps between trials: its driver (the context; the trial's allocations are freed after it) and inputs read from disk."""

    def driver(self, request: TrialRequest) -> Driver: ...

    def load(self, path: str) -> np.ndarray: ...

    def kept(self, path: str, driver: Driver, helpers: str | None) -> Kept | None: ...


def run_gpu(request: TrialRequest, reuse: Reuse | None = None) -> TrialResult:
    started = time.perf_counter()
    driver = reuse.driver(request) if reuse is not None else Driver(request.backend, request.device_index)
    module = driver.load(Path(request.code_object).read_bytes())
    function = driver.function(module, request.entry)
    driver.allow_shared(function, request.shared_bytes)
    if reuse is not None:
        buffers, params = upload(driver, request.args, reuse.load, lambda path: reuse.kept(path, driver, request.timing_code_object))
    else:
        buffers, params = upload(driver, request.args)
    launch = lambda: driver.launch(function, dims(request.grid), dims(request.block), request.shared_bytes, params)  # noqa: E731
    result = TrialResult(status="OK", device=driver.name(), stage_s=time.perf_counter() - started)

    if request.mode == "correctness":
        launch()
        driver.synchronize()
        wanted = ({check.output for check in request.gate.checks} if request.gate is not None
                  else {arg.name for arg in request.args if arg.output_path})
        outputs: dict[str, np.ndarray] = {}
        for arg in request.args:
            if arg.kind == "buffer" and arg.name in wanted:
                outputs[arg.name] = host = np.empty(arg.shape, dtype=arg.dtype)
                driver.dtoh(host.ctypes.data, buffers[arg.name], host.nbytes)
        if request.gate is not None:  # compared here, in memory (tools/gate/outputs.py), instead of written out
            from hyperloom.tools.gate.outputs import judge_outputs

            result.gate = judge_outputs(outputs, request.gate)
            return result
        for arg in request.args:
            if arg.name in outputs:
                np.save(arg.output_path, outputs[arg.name])
        return result

    result.cache_bytes = driver.l2_bytes()
    flush_bytes = max(2 * result.cache_bytes, MIN_FLUSH_BYTES) if request.timing.flush_cache else 0
    helpers = _Helpers(driver, request, flush_bytes)
    start, end = driver.event(), driver.event()
    head_start_s = helpers.head_start_seconds(start, end)
    late: list[bool] = []  # per rep: enqueued after the flush and spin could have ended

    def one_rep() -> tuple[float, float]:
        # Kernel time: the flush and a spin run on the device while the host enqueues the start event, the
        # kernel and the end event behind them, so the events bracket the kernel alone. Recording start on an
        # idle device and then launching would put the host's launch latency (microseconds) inside the span.
        enqueue_began = time.perf_counter()
        helpers.flush()
        helpers.spin()
        driver.record(start)
        launch()
        driver.record(end)
        late.append(time.perf_counter() - enqueue_began > LATE_FRACTION * head_start_s)  # the device may have reached `start` first
        driver.wait(end)
        kernel_s = driver.elapsed_ms(start, end) / 1e3
        # Wall time: what a caller waiting on one launch sees, launch latency included (cache flushed again).
        helpers.flush()
        driver.synchronize()
        t0 = time.perf_counter()
        launch()
        driver.synchronize()
        return kernel_s, time.perf_counter() - t0

    result.kernel_s, result.wall_s, result.warmup_reps = sample(one_rep, request.timing)
    result.late_reps = sum(late[result.warmup_reps:])  # warm-up reps (first launches load code) do not count
    result.flush_bytes = flush_bytes
    return result


class _Helpers:
    """The device work that precedes each timed launch: the cache flush (a memset, or a read with
    kernels/runtime/timing.hip) and a spin of SPIN_NS."""

    def __init__(self, driver: Driver, request: TrialRequest, flush_bytes: int) -> None:
        if request.timing_code_object is None:
            raise RuntimeError("GPU timing needs timing_code_object (bench builds kernels/runtime/timing.hip)")
        module = driver.load(Path(request.timing_code_object).read_bytes())
        self.driver, self.flush_bytes, self.writes = driver, flush_bytes, request.timing.flush_mode == "write"
        self.buffer = driver.malloc(flush_bytes) if flush_bytes else None
        sink = driver.malloc(4)
        self._spin = driver.function(module, SPIN_ENTRY)
        self._spin_params = KernelParams([ctypes.c_int64(SPIN_NS), ctypes.c_uint64(int(sink))])
        self._read = driver.function(module, FLUSH_ENTRY)
        self._read_params = KernelParams([ctypes.c_uint64(int(self.buffer) if self.buffer is not None else 0), ctypes.c_int64(flush_bytes // 16), ctypes.c_uint64(int(sink))])
        if self.buffer is not None and not self.writes:
            driver.memset(self.buffer, 0, flush_bytes)  # written once, so every read flush finds defined bytes
        self._writes_done = 0

    def flush(self) -> None:
        """Enqueue the flush (nothing without a flush buffer); the stream orders it before what follows."""
        if self.buffer is None:
            return
        if self.writes:  # overwrite the last-level cache, so no rep finds its data there
            self._writes_done += 1
            self.driver.memset(self.buffer, self._writes_done & 0xFF, self.flush_bytes)
        else:  # read the flush buffer: the cache holds its clean lines, none of the kernel's
            self.driver.launch(self._read, [FLUSH_BLOCKS, 1, 1], [FLUSH_THREADS, 1, 1], 0, self._read_params)

    def spin(self) -> None:
        self.driver.launch(self._spin, [1, 1, 1], [1, 1, 1], 0, self._spin_params)

    def head_start_seconds(self, start: object, end: object) -> float:
        """The shortest of a few timed flush-and-spin pairs: how long the host has to enqueue a rep behind them."""
        seconds = []
        for _ in range(HEAD_START_PROBES):
            self.driver.synchronize()
            self.driver.record(start)
            self.flush()
            self.spin()
            self.driver.record(end)
            self.driver.wait(end)
            seconds.append(self.driver.elapsed_ms(start, end) / 1e3)
        return min(seconds)

