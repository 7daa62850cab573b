"""One trial on a GPU through `Driver`: identical for CUDA and HIP."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from hyperloom.core.dtypes import FNUZ, load_npy, numpy_dtype, save_npy
from hyperloom.tools.runtime.drivers import Driver, KernelParams
from hyperloom.tools.runtime.guards import damaged
from hyperloom.tools.runtime.kept import Kept
from hyperloom.tools.runtime.models import GUARD_BYTE, ArgSpec, TimedChecks, TrialRequest, TrialResult
from hyperloom.tools.runtime.sampling import sample

MIN_FLUSH_BYTES = 64 << 20
POISON_BYTE = 0xFF  # all-ones: NaN for every IEEE-style float width (fp8 e4m3fn and e5m2 too), -1 for signed integers
FNUZ_POISON_BYTE = 0x80  # the fnuz fp8 formats' one NaN (all-ones is their most negative finite value)


def poison_byte(dtype: str) -> int:
    """The byte an output is filled with before a launch, so that a value the kernel never wrote shows as NaN."""
    return FNUZ_POISON_BYTE if dtype in FNUZ else POISON_BYTE


def fill_byte(arg: ArgSpec) -> int:
    """What a buffer with no input starts as: outputs are poisoned (a value the kernel never wrote shows as NaN),
    scratch is zeroed (the state a workspace's counters and partial sums start from)."""
    return 0 if arg.role == "scratch" else poison_byte(arg.dtype)

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
    return load_npy(path)


def upload(driver: Driver, args: list[ArgSpec], load: Callable[[str], np.ndarray] = load_input,
           kept: Callable[[str], Kept | None] | None = None, guard_bytes: int = 0,
           guards: dict[str, tuple[object, int]] | None = None) -> tuple[dict[str, object], KernelParams]:
    """A launch's device buffers by name (inputs copied in, outputs poisoned, scratch zeroed) and its parameters.
    `kept`: a warm worker's device copy of an input file, copied from on the device (None: from the host).
    With `guard_bytes`, each buffer lies between guards of that many bytes (tools/runtime/guards.py), each
    allocation's start and size noted in `guards` by name."""
    buffers: dict[str, object] = {}
    values: list[ctypes._SimpleCData] = []
    for arg in args:
        if arg.kind == "scalar":
            values.append(scalar(arg))
            continue
        if guard_bytes:
            base = driver.malloc(arg.nbytes + 2 * guard_bytes)
            driver.memset(base, GUARD_BYTE, arg.nbytes + 2 * guard_bytes)
            pointer = driver.offset(base, guard_bytes)
            if guards is not None:
                guards[arg.name] = (base, arg.nbytes)
        else:
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


def guard_violations(driver: Driver, guards: dict[str, tuple[object, int]], guard_bytes: int) -> list[str]:
    """What the trial's kernels wrote into the guards of the buffers `guards` notes (read back from the device)."""
    found = []
    for name, (base, nbytes) in guards.items():
        before, after = np.empty(guard_bytes, dtype=np.uint8), np.empty(guard_bytes, dtype=np.uint8)
        driver.dtoh(before.ctypes.data, base, guard_bytes)
        driver.dtoh(after.ctypes.data, driver.offset(base, guard_bytes + nbytes), guard_bytes)
        if (hit := damaged(name, before, after)) is not None:
            found.append(hit)
    return found


def dims(sizes: list[int]) -> list[int]:
    """A grid or block as the three sizes a launch takes."""
    return [*sizes, 1, 1][:3]


class Reuse(Protocol):
    """What a warm worker keeps between trials: its driver (the context; the trial's allocations are freed after it) and inputs read from
    disk."""

    def driver(self, request: TrialRequest) -> Driver: ...

    def load(self, path: str) -> np.ndarray: ...

    def kept(self, path: str, driver: Driver, helpers: str | None) -> Kept | None: ...


def run_gpu(request: TrialRequest, reuse: Reuse | None = None) -> TrialResult:
    started = time.perf_counter()
    driver = reuse.driver(request) if reuse is not None else Driver(request.backend, request.device_index)
    module = driver.load(Path(request.code_object).read_bytes())
    function = driver.function(module, request.entry)
    driver.allow_shared(function, request.shared_bytes)
    guards: dict[str, tuple[object, int]] = {}
    load = reuse.load if reuse is not None else load_input
    kept = (lambda path: reuse.kept(path, driver, request.timing_code_object)) if reuse is not None else None
    buffers, params = upload(driver, request.args, load, kept, request.guard_bytes, guards)
    launch = lambda: driver.launch(function, dims(request.grid), dims(request.block), request.shared_bytes, params)  # noqa: E731
    result = TrialResult(status="OK", device=driver.name(), stage_s=time.perf_counter() - started)

    if request.mode == "correctness":
        launch()
        driver.synchronize()
        result.guard_violations = guard_violations(driver, guards, request.guard_bytes)
        wanted = ({check.output for check in request.gate.checks} if request.gate is not None
                  else {arg.name for arg in request.args if arg.output_path})
        outputs = read_back(driver, buffers, [arg for arg in request.args if arg.kind == "buffer" and arg.name in wanted])
        if request.gate is not None:  # compared here, in memory (tools/gate/outputs.py), instead of written out
            from hyperloom.tools.gate.outputs import judge_outputs

            result.gate = judge_outputs(outputs, request.gate)
            return result
        for arg in request.args:
            if arg.name in outputs:
                save_npy(arg.output_path, outputs[arg.name])
        return result

    result.cache_bytes = driver.l2_bytes()
    flush_bytes = max(2 * result.cache_bytes, MIN_FLUSH_BYTES) if request.timing.flush_cache else 0
    helpers = _Helpers(driver, request, flush_bytes)
    start, end = driver.event(), driver.event()
    head_start_s = helpers.head_start_seconds(start, end)
    late: list[bool] = []  # per rep: enqueued after the flush and spin could have ended

    def timed_launch() -> float:
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
        return driver.elapsed_ms(start, end) / 1e3

    def wall_launch() -> float:
        # Wall time: what a caller waiting on one launch sees, launch latency included (cache flushed again).
        helpers.flush()
        driver.synchronize()
        t0 = time.perf_counter()
        launch()
        driver.synchronize()
        return time.perf_counter() - t0

    result.kernel_s, result.wall_s, result.warmup_reps = sample(lambda: (timed_launch(), wall_launch()), request.timing)
    result.late_reps = sum(late[result.warmup_reps:])  # warm-up reps (first launches load code) do not count
    if request.checks is not None:
        outputs = [arg for arg in request.args if arg.kind == "buffer" and arg.role in ("output", "inout")]
        last, again, fresh = _checked_launches(driver, request.checks, request.args, outputs, buffers, load, timed_launch, launch, result)
        _judge_or_save(request.checks, last, again, fresh, result)
    result.flush_bytes = flush_bytes
    result.guard_violations = guard_violations(driver, guards, request.guard_bytes)
    return result


def read_back(driver: Driver, buffers: dict[str, object], args: list[ArgSpec]) -> dict[str, np.ndarray]:
    """The device buffers of `args`, copied to host arrays of their declared shape."""
    copies = {}
    for arg in args:
        copies[arg.name] = host = np.empty(arg.shape, dtype=numpy_dtype(arg.dtype))
        driver.dtoh(host.ctypes.data, buffers[arg.name], host.nbytes)
    return copies


def _checked_launches(driver: Driver, checks: TimedChecks, args: list[ArgSpec], outputs: list[ArgSpec], buffers: dict[str, object],  # type: ignore[no-untyped-def]
                      load: Callable[[str], np.ndarray], timed_launch, launch, result: TrialResult) -> tuple[dict[str, np.ndarray], ...]:
    """The last timed launch, then (for determinism) one more on the same inputs, each with its outputs poisoned and
    inout buffers back at their inputs first; then one launch on the fresh inputs (outputs left as they are). Each read back."""
    by_name = {arg.name: arg for arg in args}

    def from_the_start() -> None:
        for arg in outputs:
            if arg.role == "inout" and arg.input_path:
                _copy_in(driver, buffers[arg.name], load(arg.input_path))
            else:
                driver.memset(buffers[arg.name], poison_byte(arg.dtype), arg.nbytes)

    from_the_start()
    result.checked_kernel_s = timed_launch()
    last = read_back(driver, buffers, outputs)
    again: dict[str, np.ndarray] = {}
    if checks.determinism is not None:
        from_the_start()
        launch()
        driver.synchronize()
        again = read_back(driver, buffers, outputs)
    for name, path in checks.fresh_inputs.items():
        if name in by_name:
            _copy_in(driver, buffers[name], load(path))
    launch()
    driver.synchronize()
    return last, again, read_back(driver, buffers, outputs)


def _copy_in(driver: Driver, pointer: object, array: np.ndarray) -> None:
    host = np.ascontiguousarray(array)
    driver.htod(pointer, host.ctypes.data, host.nbytes)


def _judge_or_save(checks: TimedChecks, last: dict[str, np.ndarray], again: dict[str, np.ndarray], fresh: dict[str, np.ndarray],
                   result: TrialResult) -> None:
    """The checked launches judged here when the request gives their references (a GPU kernel cannot reach the host
    arrays they are copied into), else saved for the caller as last_, again_ and fresh_<arg>.npy."""
    if checks.last_gate is not None and checks.fresh_gate is not None:
        from hyperloom.tools.gate.outputs import gate_references, judge_checked_launches

        names = {role: {c.output: c.case for c in gate.checks} for role, gate in (("last", checks.last_gate), ("fresh", checks.fresh_gate))}
        result.timed_gates = judge_checked_launches(last, again, fresh, gate_references(checks.last_gate),
                                                    gate_references(checks.fresh_gate),
                                                    checks.last_gate.tolerance, checks.determinism, names)
        return
    folder = Path(checks.outputs)
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, arrays in (("last", last), ("again", again), ("fresh", fresh)):
        for name, array in arrays.items():
            save_npy(folder / f"{prefix}_{name}.npy", array)


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
        self._read_params = KernelParams([ctypes.c_uint64(int(self.buffer) if self.buffer is not None else 0),
                                          ctypes.c_int64(flush_bytes // 16), ctypes.c_uint64(int(sink))])
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

