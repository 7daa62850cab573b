"""GELU-and-mul in float64 (erf's exact GELU): what every variant of gelu_and_mul.py is gated against."""

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_and_mul(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    gate, up = x[:, : shape["d"]], x[:, shape["d"]:]
    return {"out": 0.5 * gate * (1.0 + _erf(gate / math.sqrt(2.0))) * up}
