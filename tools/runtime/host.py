"""The `c` backend: a shared library built by the system C compiler, called through ctypes on the host CPU."""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np

from hyperloom.core.evidence import host_device
from hyperloom.tools.runtime.gpu import dims, fill_byte, scalar
from hyperloom.tools.runtime.models import TrialRequest, TrialResult
from hyperloom.tools.runtime.sampling import sample

MIN_FLUSH_BYTES = 64 << 20


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


def run_host(request: TrialRequest) -> TrialResult:
    started = time.perf_counter()
    library = ctypes.CDLL(str(Path(request.code_object).resolve()))
    function = getattr(library, request.entry)
    function.restype = None
    arrays: dict[str, np.ndarray] = {}
    values: list[object] = []
    for arg in request.args:
        if arg.kind == "scalar":
            values.append(scalar(arg))
            continue
        if arg.input_path:
            array = np.ascontiguousarray(np.load(arg.input_path, allow_pickle=False)).copy()
        else:
            array = np.empty(arg.shape, dtype=arg.dtype)
            array.view(np.uint8)[...] = fill_byte(arg)
        arrays[arg.name] = array
        values.append(ctypes.c_void_p(array.ctypes.data))
    if request.launch_args:  # a C twin that loops over the blocks a GPU would run
        values.extend(ctypes.c_int32(n) for n in (*dims(request.grid), *dims(request.block)))
    result = TrialResult(status="OK", device=host_device(), stage_s=time.perf_counter() - started)
    if request.mode == "correctness":
        function(*values)
        for arg in request.args:
            if arg.kind == "buffer" and arg.output_path:
                np.save(arg.output_path, arrays[arg.name])
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

    result.kernel_s, result.wall_s, result.warmup_reps = sample(one_rep, request.timing)
    result.flush_bytes = 0 if flush is None else flush.nbytes
    return result

