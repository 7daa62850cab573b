"""Host side: the decode levers' library kernels built for one target at a decoder's shapes, each with its resource
report (registers, spills, LDS, occupancy), as compile_kernel reports a Triton kernel's.

The launches are the launchers' own, recorded on meta tensors in a worker (decode_launches.py); each is built by
Triton's compiler ahead of time (build.py, cached), so an AMD target builds on any machine with Triton, and a kernel
that does not build there is a failed build that says why. What a decode lever needs on a device is what this builds.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from hyperloom.core.errors import HyperloomError
from hyperloom.core.worker import run_worker
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.runtime.models import ArgSpec
from hyperloom.tools.triton.build import build_triton
from hyperloom.tools.triton.constexprs import Binding
from hyperloom.tools.triton.loader import triton_version, worker_env

RECORD_TIMEOUT_S = 180.0


class DecoderShape(BaseModel):
    """A decoder's decode-step shapes: what the levers' launches depend on."""

    name: str
    hidden: int = Field(gt=0)
    intermediate: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    slots: int = Field(192, gt=0, description="The static cache's slots (prompt + generated tokens).")
    dtype: str = "bfloat16"


SHAPES = {"llama-3.2-1b": DecoderShape(name="llama-3.2-1b", hidden=2048, intermediate=8192, heads=32, kv_heads=8, head_dim=64),
          "qwen3-1.7b": DecoderShape(name="qwen3-1.7b", hidden=2048, intermediate=6144, heads=16, kv_heads=8, head_dim=128)}
"""Llama-3.2-1B's and Qwen3-1.7B's configs, at a 128-token prompt and 64 generated (issue 65's decoders)."""


class DecodeKernelBuild(BaseModel):
    """One distinct launch of a decode lever's kernel and its build for the target."""

    lever: str
    label: str = Field(description="Which launch: the call it was recorded from.")
    entry: str
    constexprs: dict[str, int | float | bool | str]
    options: dict[str, int]
    build: TargetBuild


def decode_kernel_builds(target: str, shape: DecoderShape, workspace: Workspace) -> list[DecodeKernelBuild]:
    """Every distinct launch the decode levers make at `shape`, built for `target` (a gfx or sm_XX name)."""
    triton_version()
    outcome = run_worker("hyperloom.tools.triton.decode_launches:decode_launches", {"shape": shape.model_dump()},
                         timeout_s=RECORD_TIMEOUT_S, env={**worker_env(), "TRITON_INTERPRET": "0"})
    if not outcome.ok or "error" in (outcome.result or {}):
        said = (outcome.result or {}).get("error", {}).get("message") if outcome.ok else outcome.describe()
        raise HyperloomError(f"the decode kernels' launches could not be recorded: {said}",
                             "check that torch and triton import in this Python (pip install 'hyperloom[triton]')")
    built = []
    for one in outcome.result["launches"]:
        args = [ArgSpec(**a) for a in one["args"]]
        build, _ = build_triton(Path(one["source"]), one["entry"], target, Binding(one["constexprs"], one["options"]), args, workspace)
        built.append(DecodeKernelBuild(lever=one["lever"], label=one["label"], entry=one["entry"], constexprs=one["constexprs"],
                                       options=one["options"], build=build))
    return built
