"""Regenerate the gate demo's data: RMSNorm outputs of two candidate implementations and a reference.

The reference is RMSNorm evaluated in float64 and rounded to float32 once. `candidate_fp16.npy`
does what a half-precision kernel does (fp16 inputs and output, fp32 sum of squares); it should
pass a tolerance suited to fp16 outputs. `candidate_dropped_tail.npy` reproduces a real reduction
bug: the sum of squares misses the last 64 elements of each row (one wave that never joined the
block reduction); it must fail. Run: python examples/gate/make_data.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
ROWS, HIDDEN, EPS = 8, 4096, 1e-6


def rmsnorm(x: np.ndarray, weight: np.ndarray, *, acc: type, out: type, summed: slice = slice(None)) -> np.ndarray:
    squares = np.square(x.astype(acc))[:, summed]
    inv_rms = 1.0 / np.sqrt(squares.sum(axis=1, dtype=acc) / acc(x.shape[1]) + acc(EPS))
    return (x.astype(acc) * inv_rms[:, None] * weight.astype(acc)).astype(out)


def main() -> None:
    rng = np.random.default_rng(20261130)
    x = rng.standard_normal((ROWS, HIDDEN)).astype(np.float32)
    x[1] *= 1e-3  # small activations: eps starts to matter
    x[2] = 0.0  # an all-zero row: the output must be exactly zero
    x[3, ::97] = 60.0  # outliers, as in real hidden states
    weight = (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)

    reference = rmsnorm(x, weight, acc=np.float64, out=np.float32)
    half = rmsnorm(x.astype(np.float16), weight.astype(np.float16), acc=np.float32, out=np.float16)
    dropped = rmsnorm(x, weight, acc=np.float32, out=np.float32, summed=slice(0, HIDDEN - 64))

    np.save(HERE / "x.npy", x)
    np.save(HERE / "weight.npy", weight)
    np.save(HERE / "reference.npy", reference)
    np.save(HERE / "candidate_fp16.npy", half.astype(np.float32))
    np.save(HERE / "candidate_dropped_tail.npy", dropped)


if __name__ == "__main__":
    main()
