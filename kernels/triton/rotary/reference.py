"""Rotary embedding (HF rotate_half style) in float64: what every variant of rotary.py is gated against."""

import numpy as np


def rotary(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    cos, sin = (inputs[name].astype(np.float64)[:, None] for name in ("cos", "sin"))  # shared by the heads
    half = shape["dim"] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return {"out": x * cos + rotated * sin}
