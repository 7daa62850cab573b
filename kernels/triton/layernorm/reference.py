"""LayerNorm in float64: what every variant of layernorm.py is gated against (torch.nn.functional.layer_norm's math)."""

import numpy as np

EPS = 1e-5  # the spec's eps scalar (a reference sees buffers and shape variables, not scalars)


def layernorm(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    del shape
    x = inputs["x"].astype(np.float64)
    centred = x - x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + EPS)
    return {"y": centred * rstd * inputs["weight"].astype(np.float64) + inputs["bias"].astype(np.float64)}
