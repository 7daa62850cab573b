"""Shipped example specs: listed by name, printed, or copied into the workspace where the loop can run them.

Spec errors point here (never to a path of Hyperloom's repository, which an installed user lacks).
"""

from __future__ import annotations

import shutil

from hyperloom.core.errors import HyperloomError
from hyperloom.core.progress import ProgressFn
from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.spec.models import SpecExampleRequest, SpecExampleResult

# name -> (folder copied, the spec inside it, what it shows)
EXAMPLES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "copy": (("microbench", "copy"), "kernel.yaml",
             "the smallest complete spec: two buffers, a scalar, a launch from the shape, a C twin, an exact tolerance"),
    "rmsnorm": (("examples", "rmsnorm"), "kernel.yaml",
                "a kernel templated on its block size, tuned as written: a template entry, a define computed from the shape, a C++ twin "
                "with launch_args"),
    "rmsnorm_bf16": (("examples", "rmsnorm_bf16"), "kernel.yaml",
                     "bfloat16 buffers (drawn as values, gated in bfloat16's own ULPs): a CUDA kernel on __nv_bfloat16, a Triton variant on"
                     " tl.bfloat16 and a C twin on uint16_t storage"),
    "decode_w4a16": (("decode",), "w4a16/kernel.yaml",
                     "several variants (SIMT, tensor cores, a C twin) with their own launch and tuning space; shape variables that "
                     "steer the launch"),
    "decode_split": (("decode",), "w4a16_split/kernel.yaml",
                     "a scratch buffer (split-k partial sums and counters, zero-filled, never gated)"),
    "triton_softmax": (("triton", "softmax"), "kernel.yaml",
                       "a Triton kernel (language: triton): the @triton.jit entry, constexprs and num_warps as defines, "
                       "the kernel's own @triton.autotune configs as the tuning space, Triton's interpreter on host"),
}


def run_spec_example(request: SpecExampleRequest, workspace: Workspace, progress: ProgressFn | None = None) -> SpecExampleResult:
    del progress  # a copy of a few small files
    listing = {name: about for name, (_, _, about) in EXAMPLES.items()}
    if request.name is None:
        if request.out is not None:
            raise HyperloomError("out was given without an example name", f"pass name (one of {sorted(EXAMPLES)})")
        return SpecExampleResult(examples=listing)
    if request.name not in EXAMPLES:
        raise HyperloomError(f"no shipped example {request.name[:60]!r}", f"choose one of {sorted(EXAMPLES)}")
    parts, spec, _ = EXAMPLES[request.name]
    folder = shipped_kernels(*parts)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    copied = None
    if request.out is not None:
        out = workspace.resolve(request.out, must_exist=False, kind="dir", what="out")
        if out.exists() and any(out.iterdir()):
            raise HyperloomError(f"out {request.out[:80]!r} exists and is not empty", "name a new folder; examples never overwrite files")
        shutil.copytree(folder, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        copied = workspace.relative(out / spec)
    return SpecExampleResult(examples=listing, name=request.name, kernel_yaml=(folder / spec).read_text(), files=files, copied_to=copied)
