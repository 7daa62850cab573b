"""allreduce_int6 over torch.distributed: gloo on CPU, nccl on NVIDIA (and RCCL on AMD, same name).

The algorithm of reference.py, collective by collective: an all-gather of a small header (shape,
dtype, scheme) so a disagreement is the same error on every rank instead of a hang; one max
all-reduce of the block maxima plus one non-finite count per rank; the ring reduce-scatter and
all-gather of encoded codes with isend/irecv pairs (batched, so nccl cannot deadlock on them);
dequantization. Every rank raises the same HyperloomError for the same bad input.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.device_codec import Codec
from hyperloom.tools.allreduce.packing import wire_bytes
from hyperloom.tools.allreduce.quantize import block_count, code_bound, padded_length
from hyperloom.tools.allreduce.reference import Scheme, non_finite_error
from hyperloom.tools.allreduce.ring import scale_exchange_bytes, step_formats

if TYPE_CHECKING:
    from hyperloom.tools.allreduce.device_codec import DeviceCodec

EXTRA = "distributed"
_DTYPE_CODES = {"torch.float32": 1, "torch.float16": 2, "torch.bfloat16": 3}
_ROUNDING_CODES = {"nearest": 0, "stochastic": 1}
_PARTIAL_CODES = {"fit_int6": 0, "widen": 1}
_HEADER_DIMS = 8


def require_torch() -> Any:
    """torch, or a HyperloomError naming the optional extra that installs it."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise HyperloomError(
            f"torch is not installed, and the distributed allreduce_int6 runs on torch.distributed ({exc})",
            f"install the extra: pip install 'hyperloom[{EXTRA}]' (CPU-only: pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu), or use backend='numpy'",
        ) from exc


@dataclass(frozen=True)
class DistributedOutcome:
    result: Any  # torch.Tensor: the input's shape, dtype and device
    wire_bytes: int  # this rank's payload plus the scale exchange counted as a ring all-reduce
    codec: str  # what packed and unpacked the codes: the device kernels or torch ops, and why


def _header(tensor: Any, scheme: Scheme) -> list[int]:
    dims = list(tensor.shape)
    if len(dims) > _HEADER_DIMS:  # fold trailing dimensions so the header stays fixed-size
        tail = 1
        for d in dims[_HEADER_DIMS - 1 :]:
            tail *= d
        dims = dims[: _HEADER_DIMS - 1] + [tail]
    dtype = _DTYPE_CODES.get(str(tensor.dtype), 0)
    return [
        dtype, tensor.dim(), tensor.numel(), *dims, *[0] * (_HEADER_DIMS - len(dims)),
        scheme.block, _ROUNDING_CODES[scheme.rounding], _PARTIAL_CODES[scheme.partial_sums],
        scheme.seed & 0xFFFFFFFF, scheme.seed >> 32,
    ]


def _agree(torch: Any, dist: Any, tensor: Any, scheme: Scheme, group: Any) -> None:
    mine = torch.tensor(_header(tensor, scheme), dtype=torch.int64, device=tensor.device)
    gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, mine, group=group)
    headers = [g.tolist() for g in gathered]
    if any(h[0] == 0 for h in headers):
        bad = [r for r, h in enumerate(headers) if h[0] == 0]
        raise HyperloomError(f"rank(s) {bad} passed a tensor that is not float32, float16 or bfloat16",
                             "cast the tensor on every rank to one of those three")
    if any(h != headers[0] for h in headers):
        shapes = "; ".join(
            f"rank {r}: dtype {next(k for k, v in _DTYPE_CODES.items() if v == h[0])}, shape {h[3 : 3 + min(h[1], _HEADER_DIMS)]}"
            f", block {h[3 + _HEADER_DIMS]}"
            for r, h in enumerate(headers)
        )
        raise HyperloomError(
            f"the ranks disagree on the tensor or the scheme ({shapes})",
            "all-reduce tensors of one shape and dtype, with the same block, rounding, seed and partial_sums on every rank",
        )


def allreduce_int6(tensor: Any, scheme: Scheme = Scheme(), group: Any = None, codec_mode: Codec = "auto") -> DistributedOutcome:
    """All-reduce `tensor` across the process group with 6-bit codes; every rank gets the same bits.

    codec_mode: "auto" packs with the INT6 device kernels on GPUs (torch ops where they cannot run),
    "kernels" demands them, "torch" uses torch ops (device_codec.py).
    """
    torch = require_torch()
    dist = torch.distributed
    from hyperloom.tools.allreduce import torch_codec as codec
    from hyperloom.tools.allreduce.device_codec import codec_for

    choice = codec_for(torch, tensor.device, codec_mode)

    _agree(torch, dist, tensor, scheme, group)
    ranks, rank = dist.get_world_size(group), dist.get_rank(group)
    q_max = code_bound(ranks, scheme.partial_sums)
    length = tensor.numel()
    x = torch.zeros(padded_length(length, ranks), dtype=torch.float32, device=tensor.device)
    x[:length] = tensor.reshape(-1).to(torch.float32)

    blocks = block_count(x.numel(), scheme.block)
    exchange = torch.zeros(blocks + ranks, dtype=torch.float32, device=x.device)
    exchange[:blocks] = codec.block_amax(x, scheme.block)
    exchange[blocks + rank] = float(x.numel() - int(torch.isfinite(x).sum()))
    dist.all_reduce(exchange, op=dist.ReduceOp.MAX, group=group)
    counts = [int(c) for c in exchange[blocks:].tolist()]
    if any(counts):
        raise non_finite_error(counts)

    scales = codec.shared_scales(exchange[:blocks], q_max)
    sums = codec.quantize(x, scales, scheme.block, q_max, scheme.rounding, scheme.seed, rank)
    sent = _ring(torch, dist, sums, ranks, rank, q_max, group, choice.kernels)
    result = codec.dequantize(sums, scales, scheme.block)[:length]
    return DistributedOutcome(result.to(tensor.dtype).reshape(tensor.shape), sent + scale_exchange_bytes(blocks, ranks), choice.description)


def _ring(torch: Any, dist: Any, sums: Any, ranks: int, rank: int, q_max: int, group: Any, kernels: DeviceCodec | None) -> int:
    """ring.py's schedule on real sockets or links; `sums` (int16) is reduced in place. Returns bytes sent."""
    from hyperloom.tools.allreduce import torch_codec as codec

    size = sums.numel() // ranks
    peer = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
    send_to, recv_from = peer((rank + 1) % ranks), peer((rank - 1) % ranks)
    sent = 0
    for step, fmt in enumerate(step_formats(ranks, q_max)):
        scatter = step < ranks - 1
        k = step if scatter else step - (ranks - 1)
        out_index = (rank - k) % ranks if scatter else (rank + 1 - k) % ranks
        in_index = (out_index - 1) % ranks
        chunk = sums[out_index * size : (out_index + 1) * size]
        outgoing = kernels.encode(chunk) if kernels is not None and fmt == "int6" else codec.encode(chunk, fmt)
        incoming = torch.empty(wire_bytes(size, fmt), dtype=torch.uint8, device=sums.device)
        ops = [dist.P2POp(dist.isend, outgoing, send_to, group), dist.P2POp(dist.irecv, incoming, recv_from, group)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
        target = sums[in_index * size : (in_index + 1) * size]
        if kernels is not None and fmt == "int6":
            kernels.decode_into(incoming, target, add=scatter)
        elif scatter:
            target += codec.decode(incoming, fmt)
        else:
            target.copy_(codec.decode(incoming, fmt))
        sent += outgoing.numel()
    return sent
