"""Residual add + RMSNorm in float64: what every variant of add_rmsnorm.py is gated against."""

import numpy as np

EPS = 1e-6  # the spec's eps scalar (a reference sees buffers and shape variables, not scalars)


def add_rmsnorm(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    del shape
    dtype = inputs["residual"].dtype
    total = (inputs["x"].astype(np.float64) + inputs["residual"].astype(np.float64)).astype(dtype)  # the residual keeps its dtype
    wide = total.astype(np.float64)
    rstd = 1.0 / np.sqrt((wide * wide).mean(axis=1, keepdims=True) + EPS)
    return {"residual": total, "y": wide * rstd * inputs["weight"].astype(np.float64)}
