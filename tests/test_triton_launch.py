"""PreboundKernel (hyperloom.core.triton_launch): the first call of a specialization goes through Triton's binder, later
ones straight to the compiled kernel's launcher with every argument in signature order (constexpr defaults filled);
another alignment, dtype, integer value, constexpr or device is another specialization; hooks are handed over only
when one is registered. A fake JIT function stands in for Triton's (the real one needs a GPU: eager_bits.py)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")


class FakeCompiled:
    def __init__(self, log: list) -> None:
        self.log, self.function, self.packed_metadata = log, 0xF00, ("meta",)

    def launch_metadata(self, grid, stream, *args):  # type: ignore[no-untyped-def]
        return ("launch-metadata", grid)

    def run(self, *args):  # type: ignore[no-untyped-def]
        self.log.append(("run", args))


class FakeFunction:
    """A @triton.jit function's surface: arg_names, fn (the Python function), and fn[grid](*args, **meta)."""

    def __init__(self) -> None:
        def kernel(x, y, n, eps, BLOCK, LANES=0):  # type: ignore[no-untyped-def]
            pass

        self.fn, self.arg_names, self.log = kernel, ["x", "y", "n", "eps", "BLOCK", "LANES"], []

    def __getitem__(self, grid):  # type: ignore[no-untyped-def]
        def launch(*args, **meta):  # type: ignore[no-untyped-def]
            self.log.append(("binder", grid, args, meta))
            return FakeCompiled(self.log)
        return launch


class FakeTensor:
    def __init__(self, address: int, dtype: str = "bf16") -> None:
        self.address, self.dtype = address, dtype

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def prebound(monkeypatch):  # type: ignore[no-untyped-def]
    from hyperloom.core.triton_launch import PreboundKernel

    function = FakeFunction()
    kernel = PreboundKernel(function)
    device = SimpleNamespace(index=0)
    kernel.driver = SimpleNamespace(active=SimpleNamespace(get_current_device=lambda: device.index,
                                                           get_current_stream=lambda d: 1000 + d))
    kernel.knobs = SimpleNamespace(runtime=SimpleNamespace(launch_enter_hook=SimpleNamespace(calls=[]), launch_exit_hook=None))
    return kernel, function.log, device


def test_a_second_call_of_one_specialization_skips_the_binder_and_hands_every_argument_in_signature_order(prebound):
    kernel, log, _ = prebound
    x, y = FakeTensor(4096), FakeTensor(8192)
    kernel((3,), (x, y, 1536, 1e-6), {"BLOCK": 2048, "num_warps": 8})
    kernel((3,), (x, y, 1536, 1e-6), {"BLOCK": 2048, "num_warps": 8})
    assert [entry[0] for entry in log] == ["binder", "run"]
    assert log[1][1] == (3, 1, 1, 1000, 0xF00, ("meta",), None, None, None, x, y, 1536, 1e-6, 2048, 0)  # LANES's default


@pytest.mark.parametrize("change", [
    lambda args, meta: ((FakeTensor(4100), *args[1:]), meta),               # x no longer 16-byte aligned
    lambda args, meta: ((FakeTensor(4096, "f32"), *args[1:]), meta),        # another dtype
    lambda args, meta: ((*args[:2], 1537, args[3]), meta),                  # another width: Triton specializes ints
    lambda args, meta: (args, {**meta, "LANES": 256}),                      # another constexpr
    lambda args, meta: (args, {**meta, "num_warps": 4}),                    # another option
])
def test_another_specialization_goes_through_the_binder_again(prebound, change):
    kernel, log, _ = prebound
    args, meta = (FakeTensor(4096), FakeTensor(8192), 1536, 1e-6), {"BLOCK": 2048, "num_warps": 8}
    kernel((3,), args, meta)
    kernel((3,), *change(args, meta))
    assert [entry[0] for entry in log] == ["binder", "binder"]


def test_another_device_is_another_specialization_and_its_own_stream(prebound):
    kernel, log, device = prebound
    args, meta = (FakeTensor(4096), FakeTensor(8192), 1536, 1e-6), {"BLOCK": 2048}
    kernel((1,), args, meta)
    device.index = 1
    kernel((1,), args, meta)
    kernel((1,), args, meta)
    assert [entry[0] for entry in log] == ["binder", "binder", "run"] and log[2][1][3] == 1001


def test_a_registered_launch_hook_gets_what_the_binder_would_hand_it(prebound):
    kernel, log, _ = prebound
    hook = SimpleNamespace(calls=[print])
    kernel.knobs.runtime.launch_enter_hook = hook
    args = (FakeTensor(4096), FakeTensor(8192), 1536, 1e-6)
    kernel((2, 2), args, {"BLOCK": 2048})
    kernel((2, 2), args, {"BLOCK": 2048})
    assert log[1][1][:9] == (2, 2, 1, 1000, 0xF00, ("meta",), ("launch-metadata", (2, 2)), hook, None)
