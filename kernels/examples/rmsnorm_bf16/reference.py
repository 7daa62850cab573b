"""RMSNorm in float64 on the bfloat16 inputs (ml_dtypes arrays), rounded once to bfloat16 on return."""

import numpy as np


def rmsnorm(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)  # exact: every bfloat16 is a float64
    w = inputs["w"].astype(np.float64)
    eps = shape["eps_e6"] / 1_000_000
    y = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * w
    return {"y": y}  # the gate's worker rounds it to the declared bfloat16 (to nearest, ties to even)
