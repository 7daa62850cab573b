"""int8 x packed-ternary matmul: the weights are 2-bit fields (value - 1), field i of packed row r is weight row
i * K/4 + r (Liger-Kernel's pack_weights layout). Computed in float32 BLAS, which is exact here: every product
and partial sum is an integer below 2^24 (|a| <= 128, |w| <= 2, K <= 32768)."""

import numpy as np


def unpack(packed: np.ndarray) -> np.ndarray:
    return np.concatenate([((packed >> (2 * i)) & 3).astype(np.float32) - 1 for i in range(4)], axis=0)


def int8_int2_matmul(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    assert shape["K"] <= 32768, "float32 sums are exact only up to K = 32768"
    product = inputs["a_ptr"].astype(np.float32) @ unpack(inputs["b_ptr"])
    return {"c_ptr": product.astype(np.int32)}
