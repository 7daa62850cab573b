"""RMSNorm in float64: what every variant is gated against."""

import numpy as np


def rmsnorm(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    scale = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + shape["eps_e6"] * 1e-6)
    return {"y": x * scale}
