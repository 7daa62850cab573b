"""The device side of the codec in torch ops: the same bytes and codes as packing.py and quantize.py.

These run on whatever device the tensor lives on (CPU for gloo, CUDA/ROCm for nccl/rccl). They are
the portable stand-in for dedicated pack/unpack kernels; tests hold them bit-equal to the numpy
reference on CPU. Import only after checking torch is installed (distributed.require_torch).
"""

from __future__ import annotations

import torch

from hyperloom.tools.allreduce.packing import WireFormat
from hyperloom.tools.allreduce.quantize import Rounding, block_count, uniform_bits

_INT6_SHIFTS = (0, 6, 12, 18)


def pack_int6(codes: torch.Tensor) -> torch.Tensor:
    """int values in [-32, 31], length divisible by 4 → uint8, 3 bytes per 4 values (packing.py's layout)."""
    fields = (codes.reshape(-1, 4).to(torch.int32) & 0x3F).unbind(1)
    word = fields[0]
    for field, shift in zip(fields[1:], _INT6_SHIFTS[1:], strict=True):
        word = word | (field << shift)
    return torch.stack([word & 0xFF, (word >> 8) & 0xFF, word >> 16], dim=1).to(torch.uint8).reshape(-1)


def unpack_int6(data: torch.Tensor) -> torch.Tensor:
    """uint8, 3 bytes per 4 values → int16 values in [-32, 31]."""
    b = data.reshape(-1, 3).to(torch.int32)
    word = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    fields = torch.stack([(word >> shift) & 0x3F for shift in _INT6_SHIFTS], dim=1)
    return ((fields ^ 0x20) - 0x20).to(torch.int16).reshape(-1)  # sign-extend 6 bits


def encode(values: torch.Tensor, fmt: WireFormat) -> torch.Tensor:
    if fmt == "int6":
        return pack_int6(values)
    return values.to(torch.int8 if fmt == "int8" else torch.int16).contiguous().view(torch.uint8)


def decode(data: torch.Tensor, fmt: WireFormat) -> torch.Tensor:
    if fmt == "int6":
        return unpack_int6(data)
    return data.view(torch.int8 if fmt == "int8" else torch.int16).to(torch.int16)


def blocks_view(x: torch.Tensor, block: int) -> torch.Tensor:
    nb = block_count(x.numel(), block)
    if x.numel() == nb * block:
        return x.reshape(nb, block)
    padded = torch.zeros(nb * block, dtype=x.dtype, device=x.device)
    padded[: x.numel()] = x
    return padded.reshape(nb, block)


def block_amax(x: torch.Tensor, block: int) -> torch.Tensor:
    return blocks_view(x, block).abs().amax(dim=1)


def shared_scales(amax: torch.Tensor, q_max: int) -> torch.Tensor:
    """As quantize.shared_scales: the smallest float32 s with s·Q ≥ amax."""
    # Divide in float64 and round once to float32: the correctly rounded quotient numpy computes
    # (float64 has more than 2·24+2 bits, so the double rounding is exact). CUDA's division by a
    # Python scalar multiplies by a rounded reciprocal instead, which is one ULP off at times.
    s = (amax.double() / q_max).to(torch.float32)
    short = s.double() * q_max < amax.double()
    return torch.where(short, torch.nextafter(s, torch.full_like(s, float("inf"))), s)


def quantize(x: torch.Tensor, scales: torch.Tensor, block: int, q_max: int, rounding: Rounding, seed: int, rank: int) -> torch.Tensor:
    blocks = blocks_view(x, block)
    divisor = torch.where(scales > 0, scales, torch.ones_like(scales))[:, None]
    v = (blocks.double() / divisor.double()).to(torch.float32)  # correctly rounded, as numpy's float32 division
    if rounding == "nearest":
        codes = torch.round(v)  # ties to even, as numpy.rint
    else:
        indices = torch.arange(blocks.numel(), dtype=torch.int64, device=x.device)
        u = uniform_bits(indices, seed, rank).to(torch.float32) * 2.0**-24
        codes = torch.clamp(torch.floor(v + u.reshape(blocks.shape)), -q_max, q_max)
    return codes.to(torch.int16).reshape(-1)[: x.numel()]


def dequantize(sums: torch.Tensor, scales: torch.Tensor, block: int) -> torch.Tensor:
    return (blocks_view(sums.to(torch.float32), block) * scales[:, None]).reshape(-1)[: sums.numel()]
