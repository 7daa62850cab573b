"""The ranks' inputs: one .npy per rank from the workspace, or generated from a seed."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_bytes, sha256_file
from hyperloom.core.workspace import Workspace
from hyperloom.tools.allreduce.dtypes import FloatName, from_float32, input_kind, to_float32
from hyperloom.tools.allreduce.models import MAX_GENERATED_ELEMENTS, MAX_TOTAL_ELEMENTS, AllreduceRequest, Distribution
from hyperloom.tools.gate.sources import NpyFile


@dataclass(frozen=True)
class RankInputs:
    stored: list[np.ndarray]  # as given: float32, float16, or uint16 bfloat16 bit patterns
    values: list[np.ndarray]  # the same, flat float32 (exact)
    shape: tuple[int, ...]
    kind: FloatName
    digests: list[str]  # sha256 per rank: of the file, or of the generated array's bytes


def rank_inputs(request: AllreduceRequest, workspace: Workspace) -> RankInputs:
    if request.inputs is not None:
        if request.ranks is not None or request.shape is not None:
            raise HyperloomError("both input files and ranks/shape were given",
                                 "pass inputs (one .npy per rank), or ranks and shape to generate them, not both")
        return _load(request.inputs, request.bfloat16_bits, workspace)
    if request.ranks is None or request.shape is None:
        raise HyperloomError("no inputs: neither .npy files nor ranks and shape were given",
                             "pass inputs (one .npy per rank), or ranks and shape (with seed and distribution) to generate them")
    return generate(request.ranks, tuple(request.shape), request.seed, request.distribution, request.dtype)


def _load(paths: list[str], bfloat16_bits: bool, workspace: Workspace) -> RankInputs:
    stored, kinds, digests = [], [], []
    for rank, raw in enumerate(paths):
        path = workspace.resolve(raw, suffix=".npy", kind="file", what="input")
        label = f"rank {rank}'s input {raw!r}"
        header = NpyFile.open(path, label, comparable=False)  # the header checked against the file's size before anything is allocated
        if header.size * len(paths) > MAX_TOTAL_ELEMENTS:
            raise HyperloomError(f"{len(paths)} ranks of {header.size} elements exceed the limit of {MAX_TOTAL_ELEMENTS} elements "
                                 "over all ranks",
                                 "all-reduce fewer or smaller tensors in one call")
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise HyperloomError(f"{label} is not a readable .npy file ({exc})", "write it with numpy.save and pass that file") from exc
        kinds.append(input_kind(array.dtype, bfloat16_bits, label))
        stored.append(array.view(np.uint16) if kinds[-1] == "bfloat16" else array)
        digests.append(sha256_file(path))
    shapes = [a.shape for a in stored]
    if len(set(shapes)) > 1 or len(set(kinds)) > 1:
        described = "; ".join(f"rank {r}: {k} {list(s)}" for r, (k, s) in enumerate(zip(kinds, shapes, strict=True)))
        raise HyperloomError(f"the ranks' inputs differ in shape or dtype ({described})",
                             "an all-reduce sums tensors of one shape and dtype: give every rank the same")
    return _finish(stored, kinds[0], digests)


def _finish(stored: list[np.ndarray], kind: FloatName, digests: list[str]) -> RankInputs:
    if stored[0].size == 0:
        raise HyperloomError(f"the inputs are empty (shape {list(stored[0].shape)})", "give tensors with at least one element")
    return RankInputs(stored, [to_float32(a, kind) for a in stored], tuple(stored[0].shape), kind, digests)


def generate(ranks: int, shape: tuple[int, ...], seed: int, distribution: Distribution, kind: FloatName) -> RankInputs:
    """Rank r's tensor from numpy's generator seeded [seed, r], in the chosen dtype."""
    elements = math.prod(shape)  # exact integers: a huge shape cannot wrap around and slip past the limits
    if any(d < 1 for d in shape) or elements > MAX_GENERATED_ELEMENTS or elements * ranks > MAX_TOTAL_ELEMENTS:
        raise HyperloomError(
            f"shape {str(list(shape))[:80]} gives {elements:.3g} elements per rank over {ranks} ranks; generated tensors have "
            f"1..{MAX_GENERATED_ELEMENTS} elements each and at most {MAX_TOTAL_ELEMENTS} over all ranks",
            "choose positive dimensions with a smaller product, or pass your own .npy files",
        )
    stored = [from_float32(_draw(np.random.default_rng([seed, r]), elements, distribution, kind), kind).reshape(shape)
              for r in range(ranks)]
    return _finish(stored, kind, [sha256_bytes(a.tobytes()) for a in stored])


def _draw(rng: np.random.Generator, n: int, distribution: Distribution, kind: FloatName) -> np.ndarray:
    if distribution == "zeros":
        return np.zeros(n, dtype=np.float32)
    if distribution == "uniform":
        return rng.uniform(-1, 1, n).astype(np.float32)
    if distribution == "denormal":  # below the smallest normal of the dtype
        return (rng.uniform(-1, 1, n) * 2.0 ** (-15 if kind == "float16" else -127)).astype(np.float32)
    if distribution == "wide_range":  # fp16 cannot hold 2^±60: keep its values inside its range
        span = (-24, 15) if kind == "float16" else (-60, 60)
        return (rng.choice([-1.0, 1.0], n) * 2.0 ** rng.uniform(*span, n)).astype(np.float32)
    values = rng.standard_normal(n, dtype=np.float32)
    if distribution == "outliers":
        values[rng.random(n) < 1e-3] *= 1000
    return values
