"""DyT forward in float64 (the contract of Liger-Kernel's _dyt_fwd_kernel with HAVE_BETA)."""

import numpy as np


def dyt(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    del shape
    x = inputs["X"].astype(np.float64)
    alpha = float(inputs["Alpha"].astype(np.float64)[0])
    return {"Y": np.tanh(alpha * x) * inputs["Gamma"].astype(np.float64) + inputs["Beta"].astype(np.float64)}
