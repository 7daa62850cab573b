"""With multiplier 1 and addend 0 each chain keeps its start value: the sum of tid + c."""

import numpy as np


def sums(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    tid = np.arange(shape["block"], dtype=np.float32)
    per_thread = sum(tid + np.float32(c) for c in range(shape["chains"]))
    return {"out": np.tile(per_thread, shape["blocks"]).astype(np.float32)}
