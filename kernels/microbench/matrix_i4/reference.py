"""With A = B = 0 every accumulator element keeps its start value tid + k; the kernel writes the
sum over its accumulators divided by their length, which is the same on every generation."""

import numpy as np


def sums(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    tid = np.arange(shape["block"], dtype=np.int64)
    per_thread = sum(tid + k for k in range(shape["chains"]))
    return {"out": np.tile(per_thread, shape["blocks"]).astype(np.int32)}
