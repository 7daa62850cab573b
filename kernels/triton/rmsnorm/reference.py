"""RMSNorm in float64: what every variant of rmsnorm.py is gated against (HF's Qwen2RMSNorm / LlamaRMSNorm math)."""

import numpy as np

EPS = 1e-6  # the spec's eps scalar (a reference sees buffers and shape variables, not scalars)


def rmsnorm(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    del shape
    x = inputs["x"].astype(np.float64)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"y": x * rstd * inputs["weight"].astype(np.float64)}
