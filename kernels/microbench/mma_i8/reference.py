"""With A = B = 0 every accumulator keeps its start value tid + 4k + j; the output is their sum."""

import numpy as np


def sums(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    tid = np.arange(shape["block"], dtype=np.int64)
    total = sum(tid + 4 * k + j for k in range(shape["chains"]) for j in range(4))
    return {"out": np.tile(total, shape["blocks"]).astype(np.int32)}
