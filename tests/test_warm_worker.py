"""Warm workers (core.warm) and trial runners (tools/runtime/pool.py) on the host: every way a call ends, and the
process replaced whenever it could carry something into the next trial."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import FIXTURES
from hyperloom.core.warm import WarmWorker
from hyperloom.tools.runtime.models import GUARD_BYTES, ArgSpec, Timing, TrialRequest
from hyperloom.tools.runtime.pool import FreshRunner, RunnerPool, WarmRunner

TESTS = Path(__file__).parent
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")


@pytest.fixture
def worker():
    started = WarmWorker(env={**os.environ, "PYTHONPATH": str(TESTS)})
    started.start()
    yield started
    started.close()


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/stat")
        if status.is_file() and status.read_text().split(") ", 1)[-1].startswith("Z"):  # a zombie no one has reaped yet: dead
            return True
        time.sleep(0.05)
    return False


def test_a_warm_worker_runs_call_after_call_in_one_process_and_a_raise_or_sys_exit_leaves_it_running(worker):
    first = worker.call("warm_calls:echo", {"value": 1}, timeout_s=10)
    assert first.ok and first.result["value"] == 1
    raised = worker.call("warm_calls:raises", {}, timeout_s=10)
    assert raised.status == "RAISED" and "refused on purpose" in raised.describe() and "warm_calls.py" in raised.where
    assert worker.call("warm_calls:exits", {}, timeout_s=10).status == "EXITED"
    again = worker.call("warm_calls:echo", {"value": 2}, timeout_s=10)
    assert again.ok and again.result == {"pid": first.result["pid"], "value": 2} and worker.alive


@pytest.mark.parametrize(("entry", "status", "message"), [
    ("warm_calls:hang", "TIMEOUT", "did not finish within 1 s and was killed"),
    ("warm_calls:segfault", "CRASH", "died with signal SIGSEGV"),
    ("warm_calls:dies", "EXITED", "exited with code 4"),
])
def test_a_hang_a_crash_or_an_exit_is_an_outcome_and_the_process_is_gone_after_it(worker, entry, status, message):
    pid = worker.pid
    started = time.perf_counter()
    outcome = worker.call(entry, {}, timeout_s=1.0)
    assert outcome.status == status and message in outcome.message
    assert time.perf_counter() - started < 15
    assert not worker.alive and _gone(pid)
    assert worker.call("warm_calls:echo", {}, timeout_s=5).status in ("CRASH", "EXITED")  # nothing answers any more
    if entry == "warm_calls:dies":
        assert "going away" in outcome.stderr  # what it printed comes back with the outcome


def test_a_warm_worker_dies_with_its_parent_even_while_a_call_hangs(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\nfrom hyperloom.core.warm import WarmWorker\n"
        "w = WarmWorker()\nw.start()\nprint(w.pid, flush=True)\nw.call('warm_calls:hang', {}, timeout_s=600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(TESTS)})
    child = int(parent.stdout.readline())
    time.sleep(0.3)
    os.kill(child, 0)  # running its hung call
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    parent.stdout.close()
    assert _gone(child), "the worker outlived its parent"


# trial runners -------------------------------------------------------------------------------------------

@pytest.fixture
def library(tmp_path):
    """scale.c built as shared libraries: y = 2x, and with FAULT 2 (hangs) and 3 (segfaults)."""
    built = {}
    for fault in (0, 2, 3):
        out = tmp_path / f"scale{fault}.so"
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", f"-DFAULT={fault}", "-o", str(out), str(FIXTURES / "specs" / "tune" / "scale.c")],
                       check=True)
        built[fault] = str(out)
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    return built, tmp_path


def _request(code_object: str, folder: Path, mode: str = "correctness") -> TrialRequest:
    return TrialRequest(backend="c", code_object=code_object, entry="scale", mode=mode,
                        timing=Timing(warmup_s=0, min_reps=6, max_reps=6, flush_cache=False), args=[
        ArgSpec(name="x", kind="buffer", dtype="float32", nbytes=256, role="input", shape=[64], input_path=str(folder / "x.npy")),
        ArgSpec(name="y", kind="buffer", dtype="float32", nbytes=256, role="output", shape=[64],
                output_path=str(folder / "y.npy") if mode == "correctness" else None),
        ArgSpec(name="n", kind="scalar", dtype="int64", value=64),
    ])


@needs_cc
def test_a_warm_runner_replaces_its_process_after_a_crash_a_hang_a_discard_and_on_its_schedule_and_the_next_trial_is_right(library):
    built, folder = library
    runner = WarmRunner("c", None, recycle_after=3)
    try:
        good = _request(built[0], folder)
        assert runner(good, timeout_s=30).status == "OK" and np.array_equal(np.load(folder / "y.npy"), 2 * np.arange(64, dtype=np.float32))
        crashed = runner(_request(built[3], folder), timeout_s=30)
        assert crashed.status == "CRASH" and "SIGSEGV" in crashed.message
        hung = runner(_request(built[2], folder), timeout_s=1.0)
        assert hung.status == "TIMEOUT" and hung.message == "the trial did not finish within 1 s and was killed"
        (folder / "y.npy").unlink()
        after = runner(good, timeout_s=30)
        assert after.status == "OK" and np.array_equal(np.load(folder / "y.npy"), 2 * np.arange(64, dtype=np.float32))
        runner.discard("verdict")
        timed = runner(_request(built[0], folder, "timing"), timeout_s=30)
        assert timed.status == "OK" and len(timed.kernel_s) == 6
        for _ in range(3):
            assert runner(good, timeout_s=30).status == "OK"
        assert runner.stats.replaced == {"CRASH": 1, "TIMEOUT": 1, "verdict": 1, "schedule": 1}
        assert runner.stats.launches == 8
    finally:
        runner.close()


@needs_cc
def test_a_host_kernels_warm_runner_starts_no_spare_beside_the_kernel_it_times(library):
    """A spare's start (Python, numpy) would share the CPU with a host kernel being timed: on 2 cores the candidate timed
    right after a replacement ran up to 2.3x slower than in a clean session. GPU runners keep theirs."""
    built, folder = library
    with RunnerPool("warm", "c", [None]) as pool:
        runner = pool.runners[0]
        assert isinstance(runner, WarmRunner) and not runner.spare
        assert runner(_request(built[0], folder, "timing"), timeout_s=30).status == "OK"
        assert runner._next is None  # nothing starting while the next launch is timed
        assert runner(_request(built[3], folder), timeout_s=30).status == "CRASH"
        assert runner._next is not None  # the replacement starts at once, and is up before the next launch's timed runs
        assert runner(_request(built[0], folder, "timing"), timeout_s=30).status == "OK" and runner._next is None
        assert runner.stats.started == 2


@needs_cc
def test_fresh_and_warm_runners_give_the_same_results_for_the_same_trials(library):
    built, folder = library
    with RunnerPool("warm", "c", [None]) as warm:
        results = {}
        for name, runner in (("fresh", FreshRunner(None)), ("warm", warm.runners[0])):
            results[name] = [runner(_request(built[fault], folder), timeout_s=1.0 if fault == 2 else 30).status for fault in (0, 3, 2, 0)]
    assert results["fresh"] == results["warm"] == ["OK", "CRASH", "TIMEOUT", "OK"]


class _Memory(dict):
    """Allocations by their start; an address inside one (a buffer past its guard region) reads and writes it from there."""

    def __missing__(self, address: int) -> memoryview:
        for start, block in self.items():
            if start <= address < start + len(block):
                return memoryview(block)[address - start:]
        raise KeyError(address)


class FakeHip:
    """hip-python's calls, over host memory, enough to run gpu.py's correctness path (the kernel does nothing)."""

    hipDeviceAttribute_t = type("Attributes", (), {"hipDeviceAttributeL2CacheSize": 1})

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = _Memory()
        self.modules: set[int] = set()
        self.events: set[int] = set()
        self.on_launch = None  # what the kernel under test does (it does nothing by default)
        self._next = 1 << 20

    def _handle(self, nbytes: int = 0) -> int:
        self._next += max(1 << 16, -(-nbytes // (1 << 16)) * (1 << 16))  # address ranges apart, as a device allocator's are
        return self._next

    def hipInit(self, flags): return (0,)
    def hipDeviceGet(self, index): return (0, index)
    def hipSetDevice(self, index): return (0,)
    def hipDeviceGetName(self, size, device): return (0, b"fake gpu\0")
    def hipModuleLoadData(self, image):
        handle = self._handle()
        self.modules.add(handle)
        return (0, handle)
    def hipModuleUnload(self, module):
        self.modules.remove(module)
        return (0,)
    def hipModuleGetFunction(self, module, name): return (0, (module, name))
    def hipMalloc(self, nbytes):
        pointer = self._handle(nbytes)
        self.memory[pointer] = bytearray(nbytes)
        return (0, pointer)
    def hipFree(self, pointer):
        del self.memory[pointer]
        return (0,)
    def hipMemcpyHtoD(self, pointer, address, nbytes):
        import ctypes
        self.memory[pointer][:nbytes] = ctypes.string_at(address, nbytes)
        return (0,)
    def hipMemcpyDtoH(self, address, pointer, nbytes):
        import ctypes
        ctypes.memmove(address, bytes(self.memory[pointer][:nbytes]), nbytes)
        return (0,)
    def hipMemsetD8(self, pointer, byte, nbytes):
        self.memory[pointer][:nbytes] = bytes([byte]) * nbytes
        return (0,)
    def hipModuleLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        import ctypes
        if function[1] == b"hyperloom_checksum":  # timing.hip's sum, in Python: words times odd weights, mod 2^64
            words_at, count, sum_at = (ctypes.c_uint64.from_address(a).value for a in (ctypes.c_void_p * 3).from_address(params))
            words = np.frombuffer(bytes(self.memory[words_at][: 4 * count]), dtype=np.uint32).astype(np.uint64)
            total = int((words * (2 * np.arange(count, dtype=np.uint64) + 1)).sum(dtype=np.uint64))
            self.memory[sum_at][:8] = total.to_bytes(8, "little")
        elif self.on_launch is not None:  # given the kernel's buffer arguments (its first two parameters)
            self.on_launch([ctypes.c_uint64.from_address(a).value for a in (ctypes.c_void_p * 2).from_address(params)])
        return (0,)
    def hipMemcpyDtoD(self, destination, source, nbytes):
        self.memory[destination][:nbytes] = self.memory[source][:nbytes]
        return (0,)
    def hipDeviceTotalMem(self, device): return (0, 1 << 30)
    def hipDeviceSynchronize(self): return (0,)
    def hipEventCreate(self, flags):
        handle = self._handle()
        self.events.add(handle)
        return (0, handle)


def test_a_warm_gpu_trial_unloads_its_code_objects_refills_the_buffers_it_keeps_and_reads_each_input_file_once(tmp_path, monkeypatch):
    from hyperloom.tools.runtime import drivers, warm_trial

    fake = FakeHip()
    monkeypatch.setattr(drivers, "_bindings", lambda backend: (fake, fake.hipDeviceAttribute_t, drivers.HIP))
    monkeypatch.setattr(warm_trial, "_REUSE", warm_trial.Reuse())
    reads = []
    monkeypatch.setattr(warm_trial, "load_input", lambda path: reads.append(path) or np.load(path, allow_pickle=False))
    (tmp_path / "kernel.hsaco").write_bytes(b"\x7fELF fake")
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    request = TrialRequest(backend="hip", code_object=str(tmp_path / "kernel.hsaco"), entry="scale", mode="correctness", args=[
        ArgSpec(name="x", kind="buffer", dtype="float32", nbytes=256, role="input", shape=[64], input_path=str(tmp_path / "x.npy")),
        ArgSpec(name="y", kind="buffer", dtype="float32", nbytes=256, role="output", shape=[64], output_path=str(tmp_path / "y.npy")),
        ArgSpec(name="n", kind="scalar", dtype="int64", value=64),
    ]).model_dump(mode="json")
    fake.on_launch = lambda buffers: fake.memory[buffers[1]].__setitem__(slice(0, 256), bytes(256))  # the first trial's kernel writes y
    held = None
    for trial in range(3):
        result = warm_trial.run_payload(request)
        assert result["status"] == "OK" and result["device"] == "fake gpu" and result["stage_s"] > 0
        assert fake.modules == set()  # every code object unloaded
        assert held is None or set(fake.memory) == held  # buffers kept for the next trial, none made anew
        held = set(fake.memory)
        y = np.load(tmp_path / "y.npy")
        # a kept buffer is poisoned afresh: the next kernel, writing nothing, shows NaN
        assert (y == 0).all() if trial == 0 else np.isnan(y).all()
        fake.on_launch = None
    assert reads == [str(tmp_path / "x.npy")]  # read from disk once, copied in every time
    time.sleep(0.01)
    np.save(tmp_path / "x.npy", np.ones(64, dtype=np.float32))  # a changed file is read again
    assert warm_trial.run_payload(request)["status"] == "OK" and len(reads) == 2


def test_a_warm_worker_keeps_inputs_on_the_device_and_fails_the_trial_whose_kernel_wrote_into_a_kept_copy(tmp_path, monkeypatch):
    from hyperloom.tools.runtime import drivers, warm_trial

    fake = FakeHip()
    monkeypatch.setattr(drivers, "_bindings", lambda backend: (fake, fake.hipDeviceAttribute_t, drivers.HIP))
    monkeypatch.setattr(warm_trial, "_REUSE", warm_trial.Reuse())
    (tmp_path / "kernel.hsaco").write_bytes(b"\x7fELF fake")
    (tmp_path / "timing.hsaco").write_bytes(b"\x7fELF helpers")
    np.save(tmp_path / "in_x.npy", np.arange(63, dtype=np.float32))
    copied = []
    real_htod = fake.hipMemcpyHtoD
    fake.hipMemcpyHtoD = lambda pointer, address, nbytes: copied.append(nbytes) or real_htod(pointer, address, nbytes)
    request = TrialRequest(backend="hip", code_object=str(tmp_path / "kernel.hsaco"), entry="scale", mode="correctness",
                           timing_code_object=str(tmp_path / "timing.hsaco"), args=[
        ArgSpec(name="x", kind="buffer", dtype="float32", nbytes=252, role="input", shape=[63], input_path=str(tmp_path / "in_x.npy")),
        ArgSpec(name="y", kind="buffer", dtype="float32", nbytes=252, role="output", shape=[63], output_path=str(tmp_path / "y.npy")),
    ]).model_dump(mode="json")
    seen = []

    def look(buffers):  # the kernel reads its x: the trial's own buffer holds the file's values
        assert buffers[0] not in kept_pointers()
        seen.append(np.frombuffer(bytes(fake.memory[buffers[0]][:252]), dtype=np.float32).copy())

    def kept_pointers():
        return {k.pointer for inputs in warm_trial._REUSE._device.values() for k in inputs._copies.values()}

    fake.on_launch = look
    for _ in range(3):
        assert warm_trial.run_payload(request)["status"] == "OK"
    # over the bus once, on the device after
    assert copied == [252] and all(np.array_equal(x, np.arange(63, dtype=np.float32)) for x in seen)
    guarded = 252 + 2 * GUARD_BYTES  # each trial's buffer between its guard regions
    # between trials: x and y kept for the next trial, the kept copy, the sum
    assert sorted(len(m) for m in fake.memory.values()) == [8, 252, guarded, guarded]
    (kept,) = kept_pointers()

    def stray_write(buffers):  # out of bounds, into the kept copy
        fake.memory[kept][0] ^= 0xFF

    fake.on_launch = stray_write
    damaged = warm_trial.run_payload(request)
    assert damaged["status"] == "ERROR" and "wrote outside its buffers" in damaged["message"] and "input(s) x " in damaged["message"]
    assert kept_pointers() == set() and kept not in fake.memory  # the damaged copy is gone
    fake.on_launch = look
    assert warm_trial.run_payload(request)["status"] == "OK" and copied == [252, 252]  # made again from the host
    assert np.array_equal(seen[-1], np.arange(63, dtype=np.float32))


@pytest.mark.parametrize("ending", ["close", "timeout"])
def test_a_child_that_left_the_worker_s_process_group_dies_with_the_worker(worker, ending):
    """A group kill misses a child in a session of its own; left alive it would run beside every later leg (and, once
    the worker is gone, nothing could find it by its parent)."""
    child = worker.call("warm_calls:detaches", {}, timeout_s=10).result["child"]
    assert os.getpgid(child) != worker.pid
    if ending == "close":
        worker.close()
    else:
        assert worker.call("warm_calls:hang", {}, timeout_s=1).status == "TIMEOUT"
    assert _gone(child), f"the detached child {child} outlived its worker"
