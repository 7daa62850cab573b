"""The lever catalog: named changes to how a workload runs, each applied inside its worker and judged like any
candidate (gated on the frozen outputs, then A/B-timed against the baseline).

A lever is one of: environment variables set before the worker starts (read by torch or its libraries), a torch
setting made after import, a wrapper around the workload's model or step (torch.compile, a CUDA/HIP graph), a
context around each step (the scaled-dot-product attention backend; a torch.compiler stance or CUDA-graph step mark,
which act on compiled code only and so are NO_OP on an eager baseline: optimize tries them again on a compiled stack),
a replacement of the model's generate (decode_loop: greedy decode on a static KV cache as replayed graphs; NO_OP where
the workload's generate uses a dynamic cache, so optimize tries it on a stack that made the cache static), or one of the workload's own
knobs (`knob:NAME=VALUE`, a keyword argument of its factory), a change made to the built model (a static KV cache for its generate,
channels_last memory format, sibling projections fused into one GEMM, weights stored in int8 or fp8, its decode attention
or decode GEMVs routed to kernels of the library), or an overrides module (`overrides:FILE.py`, imported in the
worker before the workload is built: kernels put in place of a module's method or a function, tools/workload/overrides.py).
Each names the vendors it applies to (`cuda`: an NVIDIA
build of torch, `rocm`: a ROCm build, `cpu`: no GPU) and the evidence that it took effect; a lever that left no
such evidence is a no-op, not a speedup of noise.

This module is plain data: the controller reads it to refuse unknown or inapplicable levers before any process
starts, the worker (tools/workload/worker/runner.py) applies what a lever names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from hyperloom.core.closest import closest, did_you_mean
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace

Vendor = Literal["cuda", "rocm", "cpu"]
# What a lever acts on, read from the baseline before it is tried (tools/optimize/applies.py): a convolution, a
# scaled-dot-product attention or a GEMM in the baseline's profiled step, a transformers generate or float32 weights on
# its model (a generate on a static KV cache), sibling projections on one input (q/k/v, gate/up), compiled code or CUDA/HIP graph
# launches in the step (a stack can bring these three: a lever needing them is tried on the stack instead of alone).
Need = Literal["convolution", "attention", "gemm", "generate", "static_cache", "float32_weights", "projections", "compiled", "graph_launch"]
LeverKind = Literal["env", "setting", "compile", "graph", "sdpa", "stance", "cache", "layout", "fusion", "quantize", "kernel", "generate",
                    "knob", "overrides"]
GPU: frozenset[str] = frozenset({"cuda", "rocm"})
ANY: frozenset[str] = frozenset({"cuda", "rocm", "cpu"})
KNOB = re.compile(r"^knob:([A-Za-z_]\w*)=(.{1,200})$")
OVERRIDES = re.compile(r"^overrides:(.{1,300}\.py)$")
EXCLUSIVE_KINDS = ("compile", "graph", "sdpa", "quantize")  # one candidate holds at most one lever of each
# The kinds a kept worker can apply to a fresh copy of the workload as built (runner.serve, spare.py): they act on the
# built workload or around its step, or a torch setting put back before the next candidate (worker_build.restore_settings);
# an env variable, an overrides module or a knob changes the process.
SERVED_KINDS: frozenset[str] = frozenset({"compile", "graph", "sdpa", "stance", "cache", "layout", "fusion", "quantize", "kernel",
                                          "generate", "setting"})


# The kinds whose code Hyperloom did not write: an overrides module (an agent's, a kernel's integration) and a knob (a
# path of the user's own workload). A candidate with one proves its step's work (proof.py); the catalog's other levers
# are Hyperloom's code, judged by their outputs, their engagement, the tamper checks and the controller's clock.
UNREVIEWED_KINDS: frozenset[str] = frozenset({"overrides", "knob"})


def unreviewed(levers: Iterable[Lever]) -> bool:
    """Whether any of `levers` runs code Hyperloom did not write (UNREVIEWED_KINDS): its step must prove its work."""
    return any(lever.kind in UNREVIEWED_KINDS for lever in levers)


def unserved(kinds: Iterable[str]) -> list[str]:
    """The lever kinds among `kinds` a kept worker cannot apply to a copy of the workload (sorted; empty: it can)."""
    return sorted(set(kinds) - SERVED_KINDS)


@dataclass(frozen=True)
class Lever:
    name: str
    kind: LeverKind
    vendors: frozenset[str]
    what: str  # what it changes, for the catalog's listing
    engaged_by: str  # the evidence that it took effect
    env: dict[str, str] = field(default_factory=dict)  # for kind env; "{folder}" is the candidate's folder in the workspace
    value: str = ""  # compile: the mode; sdpa: the backend; setting: the setting's name; knob: NAME=VALUE
    needs: Need | None = None  # what it acts on; None: anything
    acts_on: Need | None = None  # what the baseline itself must have beside `needs` (which a stack may bring): decode_attention's attention
    brings: frozenset[Need] = frozenset()  # what it puts in the step that another lever may need (a static cache, compiled code)
    # why a step with it may do far less gemm/attention work than the baseline's (a cache, a quantization): proof of work is waived
    less_work: str = ""
    lossy: str = ""  # how it changes numerics beyond the model's own: optimize tries it only under a tolerance the user declared


CATALOG: tuple[Lever, ...] = (
    Lever("compile", "compile", ANY, "torch.compile of the workload's model (its `model` attribute) or, without one, of its step",
          "dynamo compiled at least one graph", value="default", brings=frozenset({"compiled"})),
    Lever("compile_reduce_overhead", "compile", GPU, "torch.compile, mode reduce-overhead (Inductor with CUDA/HIP graphs)",
          "dynamo compiled at least one graph", value="reduce-overhead", brings=frozenset({"compiled", "graph_launch"})),
    Lever("compile_max_autotune", "compile", ANY, "torch.compile, mode max-autotune (Inductor tunes its kernels; long compile)",
          "dynamo compiled at least one graph", value="max-autotune", brings=frozenset({"compiled"})),
    Lever("compile_max_autotune_no_cudagraphs", "compile", GPU, "torch.compile, mode max-autotune-no-cudagraphs (Inductor tunes its "
          "kernels, no CUDA graphs: for steps whose outputs a graph would overwrite; on a CPU max-autotune is the same mode)",
          "dynamo compiled at least one graph", value="max-autotune-no-cudagraphs",
          brings=frozenset({"compiled"})),
    Lever("static_cache", "cache", ANY, "a static KV cache for the model's generate (generation_config.cache_implementation = 'static'; "
          "transformers compiles the decode step on it), so decode_loop can take a plain generate", "every generate call of a profiled "
          "step decoded on the static cache (none overrode cache_implementation)", value="static", needs="generate",
          brings=frozenset({"static_cache"})),
    Lever("channels_last", "layout", ANY, "the model's 4-D weights and the workload's 4-D tensors in channels_last memory format (NHWC "
          "convolutions)", "the model has 4-D weights, now channels_last", value="channels_last", needs="convolution"),
    Lever("fuse_projections", "fusion", ANY, "sibling linear projections that read one input fused into one GEMM each: attention's "
          "q/k/v (query/key/value) and a gated MLP's gate/up (fewer, wider GEMMs; at decode fewer GEMV launches per token)",
          "projection groups were fused and the step ran fewer GEMMs than its reference", value="projections", needs="projections"),
    Lever("int8_weight_only", "quantize", ANY, "every Linear layer's weights stored in int8 with a scale per output row (half of bf16's "
          "bytes; converted inside the GEMM only where Inductor fuses it: stack it on compile or decode_loop, "
          "with inductor_coordinate_descent on a GPU)", "Linear layers were quantized: their "
          "weights' bytes before -> after", value="int8", needs="compiled", lossy="each weight rounded to one of 255 levels of its row"),
    Lever("fp8_weight_only", "quantize", ANY, "every Linear layer's weights stored in fp8 (e4m3) with a scale per output row (half of "
          "bf16's bytes; converted inside the GEMM only where Inductor fuses it: stack it on compile or decode_loop)", "Linear layers were "
          "quantized: their weights' bytes before -> after", value="fp8", needs="compiled",
          lossy="each weight rounded to e4m3's 3 mantissa bits"),
    Lever("graph", "graph", GPU, "capture one step in a CUDA/HIP graph and replay it (the step must be graph-safe: static shapes, "
          "no host sync; e.g. a static KV cache)", "the graph was captured and each timed step replayed it"),
    Lever("sdpa_flash", "sdpa", ANY, "scaled_dot_product_attention restricted to the flash backend",
          "a flash attention op ran in a profiled step", value="FLASH_ATTENTION", needs="attention"),
    Lever("sdpa_efficient", "sdpa", GPU, "scaled_dot_product_attention restricted to the memory-efficient backend",
          "an efficient attention op ran in a profiled step", value="EFFICIENT_ATTENTION", needs="attention"),
    Lever("sdpa_cudnn", "sdpa", frozenset({"cuda"}), "scaled_dot_product_attention restricted to the cuDNN backend",
          "a cuDNN attention op ran in a profiled step", value="CUDNN_ATTENTION", needs="attention"),
    Lever("decode_attention", "kernel", GPU, "a transformers model's attention at one query position (a decode step) by "
          "Hyperloom's Triton kernel (kernels/triton/decode_attention): each KV head's cache read once for its query heads (no repeated "
          "K/V copies) and only the slots the mask keeps (a static cache where it is filled), a custom op a replayed graph captures; "
          "on the H200 a 1.2B decoder's attention 96 us a token (cuDNN, plus 52 K/V copies) -> 63 "
          "(it waits for a stack that replays graphs, decode_loop's: eager, its launch costs more host time than it saves); "
          "prefills and calls it does not cover run transformers' SDPA", "the profiled step ran the kernel (its op on the host, or its "
          "device kernel in a replayed graph) and no decode call fell back", value="decode_attention", needs="graph_launch",
          acts_on="attention"),
    Lever("decode_gemv", "kernel", GPU, "a model's plain Linear layers called with one row (a decode step at batch 1; a few rows stay "
          "with cuBLAS, which beat the kernel's few-row tile 2.9x at batch 8 on the H100) by Hyperloom's "
          "Triton GEMV (kernels/triton/gemv): 2-4 weight rows a program streamed along K, launch params per shape and device as a cold "
          "sweep measured them (kernels/triton/gemv/tuned.json; cuBLAS kept where it won), a gated MLP's silu(gate) * up folded into "
          "its down projection, a custom op a replayed graph captures (on the H100 a 1.2B decoder's token 1.391 -> 1.216 ms, 60 -> 69 % "
          "of the bytes roof); the output embeddings and prefill GEMMs keep cuBLAS; waits for a stack that replays graphs (decode_loop)",
          "the profiled step ran the kernel (its op on the host, or its device kernel in a replayed graph) and no decode call fell back",
          value="decode_gemv", needs="graph_launch", acts_on="gemm"),
    Lever("sdpa_math", "sdpa", ANY, "scaled_dot_product_attention restricted to the math (unfused) backend",
          "the math attention path ran in a profiled step", value="MATH", needs="attention"),
    Lever("tunableop", "env", GPU, "PyTorch TunableOp: GEMMs tuned on first use, the choices kept in the candidate's folder",
          "TunableOp was enabled and wrote its results file",
          env={"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "1",
               "PYTORCH_TUNABLEOP_FILENAME": "{folder}/tunableop_results%d.csv"}, needs="gemm"),
    Lever("hipblaslt", "env", frozenset({"rocm"}), "prefer hipBLASLt over rocBLAS for torch's GEMMs (TORCH_BLAS_PREFER_HIPBLASLT=1)",
          "the profiled step's kernel names changed", env={"TORCH_BLAS_PREFER_HIPBLASLT": "1"}, needs="gemm"),
    Lever("tf32", "setting", frozenset({"cuda"}), "TF32 for float32 matmuls and convolutions (changes numerics: the gate decides)",
          "the profiled step's kernel names changed", value="tf32", needs="float32_weights"),
    Lever("skip_guard_eval", "stance", ANY, "torch.compiler.set_stance(skip_guard_eval_unsafe=True) around each step after warm-up: "
          "compiled code runs without evaluating dynamo's guards (host time per call; unsafe where a step's shapes or types "
          "change, which the gate checks on the workload's own inputs only)", "graphs were compiled, their guards skipped after warm-up",
          value="skip_guard_eval", needs="compiled"),
    Lever("cudagraph_step_begin", "stance", GPU, "torch.compiler.cudagraph_mark_step_begin() before each step: CUDA-graph "
          "trees (compile mode reduce-overhead, a static KV cache's compiled decode) start a new iteration at each step instead "
          "of recording graphs for paths the last step's live outputs opened", "the step launched CUDA graphs",
          value="cudagraph_step_begin", needs="graph_launch"),
    Lever("decode_loop", "generate", ANY, "transformers' greedy generate on a static KV cache as one loop of Hyperloom's: a "
          "prefill, then per token one step (forward, causal mask, argmax, cache write) compiled once and replayed from "
          "CUDA/HIP graphs (eager on a CPU), no host sync between tokens (EOS applied once at the end; a left-padded batch "
          "where the forward takes position_ids); a call it does not cover exactly (a dynamic cache, sampling, beams, right "
          "padding, a logits processor) runs transformers' own generate, "
          "and then the lever did not take effect", "every generate call of a profiled step took the loop, none fell back",
          value="decode_loop", needs="static_cache", brings=frozenset({"graph_launch"})),  # on a GPU; what waits for it runs only there
    Lever("inductor_coordinate_descent", "setting", GPU, "Inductor's coordinate-descent tuning of its Triton kernels' launch "
          "configurations (torch._inductor.config.coordinate_descent_tuning; gpt-fast's setting for decode: its GEMV-like reductions, "
          "a weight-only quantized layer's fused conversion; longer compiles)", "graphs were compiled with the tuning on",
          value="coordinate_descent", needs="compiled"),
    Lever("inductor_combo_kernels", "setting", GPU, "Inductor's combo kernels (torch._inductor.config.combo_kernels): a compiled "
          "graph's independent small kernels (a decode step's norms, rotary, cache writes, casts) launched as one; on the H100 a 1.2B "
          "decoder's replayed decode step on decode_loop + fuse_projections + decode_attention ran 236 -> 199 kernels, 1.391 -> 1.346 ms "
          "a token", "graphs compiled with it on ran fewer device kernels than the reference's step", value="combo_kernels",
          needs="compiled"),
    Lever("cudnn_benchmark", "setting", GPU, "cuDNN/MIOpen benchmark mode: convolution algorithms picked by timing",
          "the profiled step's kernel names changed", value="cudnn_benchmark", needs="convolution"),
)
BY_NAME = {lever.name: lever for lever in CATALOG}


def lever(name: str, vendor: str | None = None) -> Lever:
    """The catalog's lever `name`, or a knob lever `knob:NAME=VALUE`; anything else is refused with the closest name
    and the catalog's levers that apply on `vendor` (all of them when it is not known yet)."""
    if name in BY_NAME:
        return BY_NAME[name]
    knob = KNOB.match(name)
    if knob:
        return Lever(name, "knob", ANY, f"the workload's own knob {knob.group(1)} = {knob.group(2)}",
                     "the workload's factory took the knob", value=f"{knob.group(1)}={knob.group(2)}")
    overrides = OVERRIDES.match(name)
    if overrides:
        return Lever(name, "overrides", ANY, f"the overrides module {overrides.group(1)} (kernels put in place of methods or functions)",
                     "every replacement it made was called", value=overrides.group(1))
    near = closest(name, BY_NAME)
    elsewhere = (f", which applies on {', '.join(sorted(BY_NAME[near].vendors))} only"
                 if near and vendor and vendor not in BY_NAME[near].vendors else "")
    valid = [item.name for item in CATALOG if vendor is None or vendor in item.vendors]
    raise HyperloomError(f"unknown lever {name[:80]!r}" + (f" (did you mean {near}{elsewhere}?)" if near else ""),
                         f"use one of {', '.join(valid)}" + (f" (the levers that apply on {vendor})" if vendor else "")
                         + ", knob:NAME=VALUE for a knob the workload declares, or overrides:FILE.py")


def check_candidate(names: list[str], vendor: str, knobs: dict[str, list[str] | None]) -> list[Lever]:
    """The levers of one candidate, each known, applying on `vendor`, and at most one of each kind that excludes another."""
    levers = [lever(name, vendor) for name in names]
    for item in levers:
        if vendor not in item.vendors:
            raise HyperloomError(f"lever {item.name} does not apply on this machine ({vendor}): it is for "
                                 f"{', '.join(sorted(item.vendors))}",
                                 "leave it out here; it is tried where its vendor's torch runs")
        if item.kind == "knob":
            name, value = item.value.split("=", 1)
            if name not in knobs:
                raise HyperloomError(f"the workload declares no knob {name!r}" + did_you_mean(name, knobs)
                                     + (f"; it declares {', '.join(knobs)}" if knobs else "; it declares none"),
                                     "use a keyword argument of the workload's factory, or leave the lever out")
            allowed = knobs[name]
            if allowed is not None and value not in allowed:
                raise HyperloomError(f"knob {name} takes {', '.join(allowed)}, not {value!r}", f"use one of {', '.join(allowed)}")
    if vendor == "cpu":  # a Triton kernel in an overrides module runs in Triton's interpreter there
        levers = [replace(item, env={"TRITON_INTERPRET": "1"}) if item.kind == "overrides" else item for item in levers]
    if any(item.kind == "generate" for item in levers) and any(item.kind == "graph" for item in levers):
        raise HyperloomError("decode_loop replays graphs of its own inside each step; a whole-step graph cannot capture them",
                             "make them separate candidates")
    for kind in EXCLUSIVE_KINDS:
        if sum(item.kind == kind for item in levers) > 1:
            raise HyperloomError(f"one candidate has two {kind} levers ({', '.join(i.name for i in levers if i.kind == kind)})",
                                 "make them separate candidates")
    if len({item.name for item in levers}) != len(levers):
        raise HyperloomError("a lever is named twice in one candidate", "name each lever once")
    return levers


def environment(levers: list[Lever], folder: str) -> dict[str, str]:
    """The environment variables the candidate's levers set, with the candidate's folder filled in."""
    return {key: value.replace("{folder}", folder) for item in levers if item.kind in ("env", "overrides")
            for key, value in item.env.items()}


def prepared(names: list[str], vendor: str, knobs: dict[str, list[str] | None], workspace: Workspace) -> list[Lever]:
    """The levers of one candidate as a worker takes them: checked (check_candidate), each overrides file resolved inside
    the workspace (refused outside it, or when missing)."""
    return [replace(item, value=str(workspace.resolve(item.value, kind="file", suffix=".py", what="overrides module")))
            if item.kind == "overrides" else item
            for item in check_candidate(names, vendor, knobs)]
