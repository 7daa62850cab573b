"""The INT6 wire codec on a GPU: the shipped kernels (kernels/allreduce/int6.hip), built by compile_kernel for the tensor's
device and launched on torch's current stream; `codec_for` picks them or torch ops (torch_codec.py) per call and says why.

Import only after checking torch is installed (distributed.require_torch)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Literal

from hyperloom.core.cache import cache_dir
from hyperloom.core.errors import HyperloomError
from hyperloom.core.shipped import stage_shipped_file
from hyperloom.core.workspace import Workspace

Codec = Literal["auto", "torch", "kernels"]
THREADS = 256
SOURCE = "int6.hip"


@dataclass(frozen=True)
class CodecChoice:
    kernels: DeviceCodec | None  # None: torch ops
    description: str  # what ran, and why, for the report


def device_target(torch: Any, device: Any) -> str:
    """The compile target of a torch GPU device: sm_XY on CUDA, the gfx name on ROCm."""
    if torch.version.hip is not None:
        return str(torch.cuda.get_device_properties(device).gcnArchName).split(":")[0]
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


class DeviceCodec:
    """int6_pack and int6_unpack_add, built for one device and launched on torch tensors."""

    def __init__(self, torch: Any, device: Any) -> None:
        from hyperloom.tools.compile.api import compile_kernel
        from hyperloom.tools.compile.models import CompileRequest
        from hyperloom.tools.runtime.drivers import Driver

        self.torch, self.device = torch, device
        self.target = device_target(torch, device)
        root = cache_dir("allreduce-kernels").resolve()
        stage_shipped_file(root, "allreduce", SOURCE)  # ranks staging it at once never see half a file
        build = compile_kernel(CompileRequest(source=SOURCE, targets=[self.target]), Workspace(root)).builds[0]
        if not build.ok:
            raise HyperloomError(f"the INT6 kernels do not build for {self.target}: {build.summary}",
                                 "install the toolchain (nvcc for NVIDIA, ROCm or LLVM for AMD), or use codec='torch'")
        # the device's primary context, the one torch's runtime uses: torch's device pointers are valid in it
        self.driver = Driver("hip" if torch.version.hip is not None else "cuda",
                             device.index if device.index is not None else torch.cuda.current_device())
        module = self.driver.load((root / build.code_object).read_bytes())
        self._pack = self.driver.function(module, "int6_pack")
        self._unpack_add = self.driver.function(module, "int6_unpack_add")

    def encode(self, codes: Any) -> Any:
        """int16 codes in [-32, 31] (a multiple of 4, contiguous, on the device) → 3 bytes per 4 codes."""
        groups = codes.numel() // 4
        data = self.torch.empty(3 * groups, dtype=self.torch.uint8, device=codes.device)
        self._launch(self._pack, groups, [ctypes.c_uint64(codes.data_ptr()), ctypes.c_uint64(data.data_ptr()), ctypes.c_int64(groups)])
        return data

    def decode_into(self, data: Any, target: Any, add: bool) -> None:
        """target (int16, contiguous) += the codes in data (add), or = them (store)."""
        groups = target.numel() // 4
        self._launch(self._unpack_add, groups,
                     [ctypes.c_uint64(data.data_ptr()), ctypes.c_uint64(target.data_ptr()), ctypes.c_int64(groups),
                                                ctypes.c_int32(0 if add else 1)])

    def _launch(self, function: Any, groups: int, values: list[ctypes._SimpleCData]) -> None:
        from hyperloom.tools.runtime.drivers import KernelParams

        if groups:
            # torch's current stream: ordered with torch's own work and the NCCL/RCCL transfers torch queues on it
            stream = self.torch.cuda.current_stream(self.device).cuda_stream
            self.driver.launch(function, [-(-groups // THREADS), 1, 1], [THREADS, 1, 1], 0, KernelParams(values), stream=stream)


_CHOSEN: dict[tuple[str, str], CodecChoice] = {}


def codec_for(torch: Any, device: Any, codec: Codec) -> CodecChoice:
    """The codec a run uses on `device`, with a description that says which and why; decided once per process."""
    key = (str(device), codec)
    if key not in _CHOSEN:
        _CHOSEN[key] = _choose(torch, device, codec)
    return _CHOSEN[key]


def _choose(torch: Any, device: Any, codec: Codec) -> CodecChoice:
    if codec == "torch":
        return CodecChoice(None, "torch ops (asked for)")
    if device.type != "cuda":
        if codec == "kernels":
            raise HyperloomError(f"codec 'kernels' runs the INT6 device kernels on a GPU, and this run is on {device.type}",
                                 "use backend nccl on GPUs, or codec auto/torch")
        return CodecChoice(None, "torch ops (CPU tensors)")
    try:
        kernels = DeviceCodec(torch, device)
    except (HyperloomError, RuntimeError) as exc:
        if codec == "kernels":
            raise HyperloomError(f"the INT6 device kernels cannot run here: {exc}", "use codec auto or torch") from exc
        return CodecChoice(None, f"torch ops (device kernels unavailable: {str(exc)[:200]})")
    return CodecChoice(kernels, f"device kernels ({SOURCE} built for {kernels.target})")
