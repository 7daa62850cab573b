"""The reference ring all-reduce on integer codes, simulated over N ranks with real wire bytes.

Each rank's codes are cut into N equal chunks. Reduce-scatter: at step k (0..N-2) rank r encodes
its partial sum of chunk (r-k) mod N, which holds k+1 contributions, in the narrowest wire format
for k+1 of them, and rank r+1 decodes it into int16 and adds its own codes. Rank r then holds the
full sum of chunk (r+1) mod N. All-gather: the full sums travel around the ring in the format for
N contributions and each receiver stores them. Every rank keeps its own buffer, so their
bit-identity at the end is a fact of the simulation, not an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hyperloom.tools.allreduce.packing import WireFormat, decode, encode, wire_format_for

SCALE_BYTES = 4  # one float32 scale per block


@dataclass(frozen=True)
class RingOutcome:
    sums: list[np.ndarray]  # per rank: int16 sums of every chunk, as that rank holds them
    bytes_sent: list[int]  # per rank: payload bytes it put on the wire
    formats: list[WireFormat]  # per step: N-1 reduce-scatter steps, then N-1 all-gather steps


def step_formats(ranks: int, q_max: int) -> list[WireFormat]:
    """The wire format of each ring step: partial sums of k+1 contributions, then full sums."""
    scatter = [wire_format_for((k + 1) * q_max) for k in range(ranks - 1)]
    return scatter + [wire_format_for(ranks * q_max)] * (ranks - 1)


def ring_allreduce_bytes(count: int, itemsize: int, ranks: int) -> int:
    """Bytes one rank sends in a ring all-reduce of `count` items: 2(N-1) chunks of ⌈count/N⌉."""
    return 2 * (ranks - 1) * -(-count // ranks) * itemsize


def scale_exchange_bytes(blocks: int, ranks: int) -> int:
    """The max all-reduce of one float32 per block plus one non-finite count per rank, as a ring sends it."""
    return ring_allreduce_bytes(blocks + ranks, SCALE_BYTES, ranks)


def ring_allreduce(codes: list[np.ndarray], q_max: int) -> RingOutcome:
    """All-reduce N ranks' int8 codes (equal lengths, divisible by 4N) exactly, through encoded bytes."""
    ranks = len(codes)
    size = codes[0].size // ranks
    formats = step_formats(ranks, q_max)
    buffers = [c.astype(np.int16) for c in codes]
    sent = [0] * ranks

    def chunk(index: int) -> slice:
        return slice(index * size, (index + 1) * size)

    for step in range(2 * (ranks - 1)):
        fmt = formats[step]
        scatter = step < ranks - 1
        k = step if scatter else step - (ranks - 1)
        messages = []
        for rank in range(ranks):  # every rank sends before any receives: one synchronous ring step
            index = (rank - k) % ranks if scatter else (rank + 1 - k) % ranks
            data = encode(buffers[rank][chunk(index)], fmt)
            sent[rank] += data.size
            messages.append(((rank + 1) % ranks, index, data))
        for receiver, index, data in messages:
            if scatter:
                buffers[receiver][chunk(index)] += decode(data, fmt)
            else:
                buffers[receiver][chunk(index)] = decode(data, fmt)
    return RingOutcome(buffers, sent, formats)
