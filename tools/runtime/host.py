"""The `c` backend: a shared library built by the system C compiler, called through ctypes on the host CPU.

Every buffer lies between guard regions (tools/runtime/guards.py). A timing trial with checks also keeps the
outputs of its last timed call (the outputs poisoned before it), of one more call on the same inputs, and of a call
on a second input set (outputs not poisoned first); the caller gates them (a host kernel shares this process).

C has no bfloat16 or fp8 type: such a buffer reaches the function as its storage, `uint16_t *` for bfloat16 and
`uint8_t *` for the fp8 formats (the values' bits, as a GPU kernel's `__hip_bfloat16 *` holds them); the twin decodes
and encodes them itself (bfloat16: the top half of a float32, rounded to nearest even).
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np

from hyperloom.core.dtypes import load_npy, numpy_dtype, save_npy
from hyperloom.core.evidence import host_device
from hyperloom.tools.runtime.gpu import dims, fill_byte, poison_byte, scalar
from hyperloom.tools.runtime.guards import guarded_host, host_violations
from hyperloom.tools.runtime.models import ArgSpec, TimedChecks, TrialRequest, TrialResult
from hyperloom.tools.runtime.sampling import sample

MIN_FLUSH_BYTES = 64 << 20
_RETAINED: list[_Buffers] = []
"""The last trial's buffers, kept until the next trial starts: a kernel that left a thread writing into them (one that
returns before its work is done) writes into memory that is still there, instead of crashing the worker mid-report."""


def last_level_cache_bytes() -> int:
    """The largest CPU cache, from sysfs (0 when it cannot be read)."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=0)


class _Buffers:
    """A launch's host buffers, each inside its guards: typed views by argument name, and the inputs they started from."""

    def __init__(self, args: list[ArgSpec], guard_bytes: int) -> None:
        self.guard_bytes = guard_bytes
        self.whole: dict[str, np.ndarray] = {}
        self.views: dict[str, np.ndarray] = {}
        self.started: dict[str, np.ndarray] = {}  # inout buffers' inputs, to start the checked launches from
        for arg in args:
            if arg.kind != "buffer":
                continue
            whole, inner = guarded_host(arg.nbytes, guard_bytes)
            view = inner.view(numpy_dtype(arg.dtype)).reshape(arg.shape) if arg.nbytes else inner
            if arg.input_path:
                view[...] = load_npy(arg.input_path).reshape(view.shape)
                if arg.role == "inout":
                    self.started[arg.name] = view.copy()
            else:
                inner[...] = fill_byte(arg)
            self.whole[arg.name], self.views[arg.name] = whole, view

    def address(self, name: str) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.views[name].ctypes.data)

    def violations(self) -> list[str]:
        return host_violations(self.whole, self.guard_bytes)


def run_host(request: TrialRequest) -> TrialResult:
    started = time.perf_counter()
    library = ctypes.CDLL(str(Path(request.code_object).resolve()))
    function = getattr(library, request.entry)
    function.restype = None
    buffers = _Buffers(request.args, request.guard_bytes)
    _RETAINED[:] = [buffers]
    values: list[object] = [scalar(arg) if arg.kind == "scalar" else buffers.address(arg.name) for arg in request.args]
    if request.launch_args:  # a C twin that loops over the blocks a GPU would run
        values.extend(ctypes.c_int32(n) for n in (*dims(request.grid), *dims(request.block)))
    result = TrialResult(status="OK", device=host_device(), stage_s=time.perf_counter() - started)
    if request.mode == "correctness":
        function(*values)
        result.guard_violations = buffers.violations()
        for arg in request.args:
            if arg.kind == "buffer" and arg.output_path:
                save_npy(arg.output_path, buffers.views[arg.name])
        return result

    result.cache_bytes = last_level_cache_bytes()
    flush = np.zeros(max(2 * result.cache_bytes, MIN_FLUSH_BYTES) // 8, dtype=np.int64) if request.timing.flush_cache else None
    reading = request.timing.flush_mode == "read"

    def one_rep() -> tuple[float, float]:
        if flush is not None and reading:
            int(flush.sum())  # read every line: the cache then holds clean lines of the flush buffer
        elif flush is not None:
            np.add(flush, 1, out=flush)  # write every line: the cache then holds the flush buffer, not the kernel data
        t0 = time.perf_counter()
        function(*values)
        elapsed = time.perf_counter() - t0
        return elapsed, elapsed

    outputs = [arg for arg in request.args if arg.kind == "buffer" and arg.role in ("output", "inout")]
    result.kernel_s, result.wall_s, result.warmup_reps = sample(one_rep, request.timing)
    result.flush_bytes = 0 if flush is None else flush.nbytes
    if request.checks is not None:
        _checked_launches(request.checks, outputs, buffers, one_rep, lambda: function(*values), result)
    result.guard_violations = buffers.violations()
    return result


def _checked_launches(checks: TimedChecks, outputs: list[ArgSpec], buffers: _Buffers, one_rep, call, result: TrialResult) -> None:  # type: ignore[no-untyped-def]
    """The last timed call, then (for determinism) one more on the same inputs, each with its outputs poisoned and inout
    buffers back at their inputs first; then one call on the fresh inputs (outputs left as they are). Kept as last_,
    again_ and fresh_<arg>.npy."""
    folder = Path(checks.outputs)
    folder.mkdir(parents=True, exist_ok=True)
    result.checked_kernel_s, _ = _from_the_start(outputs, buffers, one_rep)
    last = _copies(outputs, buffers)  # at once: a kernel still writing after it returned is caught mid-way
    again = {}
    if checks.determinism is not None:
        _from_the_start(outputs, buffers, call)
        again = _copies(outputs, buffers)
    for name, path in checks.fresh_inputs.items():
        buffers.views[name][...] = load_npy(path).reshape(buffers.views[name].shape)
    call()
    fresh = _copies(outputs, buffers)
    for prefix, arrays in (("last", last), ("again", again), ("fresh", fresh)):
        for name, array in arrays.items():
            save_npy(folder / f"{prefix}_{name}.npy", array)


def _from_the_start(outputs: list[ArgSpec], buffers: _Buffers, launch):  # type: ignore[no-untyped-def]
    """`launch()` after the outputs are poisoned and inout buffers hold their inputs again."""
    for arg in outputs:
        if arg.role == "inout":
            buffers.views[arg.name][...] = buffers.started[arg.name]
        else:
            buffers.views[arg.name].view(np.uint8)[...] = poison_byte(arg.dtype)
    return launch()


def _copies(outputs: list[ArgSpec], buffers: _Buffers) -> dict[str, np.ndarray]:
    return {arg.name: buffers.views[arg.name].copy() for arg in outputs}
