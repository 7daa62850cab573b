"""Time a GPU call as a replayed decode step runs it: `calls` of them captured in one CUDA graph, replayed 7 times,
the median replay's time a call (CUDA events). Shared by gemv_sweep.py and
lab/decode-attention-vs-sdpa/decode_attention_check.py. A call that reads the same tensors each time reads them from L2
when they fit (50 MB on the H200): hot, not a model's cold read."""

from __future__ import annotations

from collections.abc import Callable

import torch


def graph_us(call: Callable[[], object], calls: int = 100) -> float:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return sorted(times)[len(times) // 2]
