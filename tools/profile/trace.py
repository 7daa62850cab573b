"""What every trace becomes once read: device activities (kernels, copies, sets) and the framework ops that launched them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Op:
    """A framework operator (torch.profiler's cpu_op) with the inputs it was called with."""

    name: str
    start_us: float
    dur_us: float
    thread: str | int
    ext_id: int | None
    dims: list | None = None  # "Input Dims": one entry per argument, a list of ints for a tensor
    types: list | None = None  # "Input type": "float", "c10::BFloat16", "Scalar", ...
    concrete: list | None = None  # "Concrete Inputs": scalar arguments as text ("-1", "[128]", "True")
    parent: Op | None = None  # the op it runs inside, on its thread (set for CPU-only traces)
    modules: tuple[str, ...] | None = None  # the nn.Module forwards it ran inside, outermost first (traces with a Python stack)


@dataclass(slots=True)
class Kernel:
    """One activity on a device queue: a kernel, a memory copy or a memory set."""

    name: str
    start_us: float
    dur_us: float
    device: str
    stream: str
    kind: str  # "kernel" | "memcpy" | "memset"
    correlation: int | None = None
    ext_id: int | None = None
    launch: str | None = None  # "grid 512x8x1 block 256x1x1" where the trace records it
    bytes: int | None = None  # copies: bytes moved, where the trace records them
    op: Op | None = None  # the innermost framework op that launched it, once linked

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass
class Trace:
    """A parsed trace. `cpu_only`: no device activity, so `kernels` holds each CPU operator's self time instead."""

    tool: str  # "torch.profiler" | "rocprofv3"
    kernels: list[Kernel]
    ops: list[Op]
    window_us: tuple[float, float]
    device_names: dict[str, str] = field(default_factory=dict)
    cpu_only: bool = False
    notes: list[str] = field(default_factory=list)
    graph_launches: list[int] = field(default_factory=list)  # correlation ids of CUDA/HIP graph launches, in launch order

    @property
    def window_s(self) -> float:
        return max(self.window_us[1] - self.window_us[0], 0.0) / 1e6

    def device_name(self) -> str | None:
        """The name of the device most kernel time ran on, where the trace names its devices."""
        if not self.kernels or not self.device_names:
            return None
        time: dict[str, float] = {}
        for k in self.kernels:
            time[k.device] = time.get(k.device, 0.0) + k.dur_us
        busiest = max(time, key=time.__getitem__)
        return self.device_names.get(busiest) or next(iter(self.device_names.values()))


def launch_text(grid: object, block: object) -> str | None:
    """'grid 512x8x1 block 256x1x1' from two [x, y, z] lists; None when either is missing."""
    if not isinstance(grid, (list, tuple)) or not isinstance(block, (list, tuple)):
        return None
    return f"grid {'x'.join(str(v) for v in grid)} block {'x'.join(str(v) for v in block)}"
