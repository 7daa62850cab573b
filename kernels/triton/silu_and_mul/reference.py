"""SiLU-and-mul in float64: what every variant of silu_and_mul.py is gated against (vLLM's silu_and_mul)."""

import numpy as np


def silu_and_mul(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    gate, up = x[:, : shape["d"]], x[:, shape["d"]:]
    return {"out": gate / (1.0 + np.exp(-gate)) * up}
