"""A class for each kernel and op: GEMM, attention, normalization, elementwise, reduction, communication, memory copy, other.

A kernel is classified by its own name first (library kernels name their job: Tensile's Cijk_, cuBLAS's
gemm/nvjet, flash attention; Inductor's triton_poi/red/per/tem by its kind and fused ops, compiled.py), then, where
the name says nothing, by the framework op that launched it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hyperloom.tools.profile.compiled import inductor_kernel
from hyperloom.tools.profile.models import KernelClass

# Order matters: the first matching rule wins (attention before gemm, communication before reduction).
KERNEL_RULES: tuple[tuple[KernelClass, re.Pattern[str]], ...] = (
    ("communication", re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa|mha_", re.I)),
    ("gemm", re.compile(r"gemm|gemv|cutlass|cublas|xmma|wgmma|nvjet|^cijk_|hipblaslt|matmul|_mm_|mfma|wmma|"
                        r"convolution|convolve|conv[123]d|_conv_|xconv|scudnn|hcudnn|_fprop|_dgrad|_wgrad", re.I)),
    ("normalization", re.compile(r"layer_?norm|rms_?norm|group_?norm|batch_?norm|instance_?norm|softmax", re.I)),
    ("memory copy", re.compile(r"memcpy|memset|direct_copy|copy_kernel|catarraybatchedcopy|^memory", re.I)),
    ("reduction", re.compile(r"reduce|reduction|argmax|argmin|topk|cub::|scan_kernel", re.I)),
    ("elementwise", re.compile(r"elementwise|pointwise|fill|silu|gelu|relu|act_and_mul|rotary|multi_tensor_apply", re.I)),
)

GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm", "addmv", "mv", "dot", "convolution",
            "_convolution", "cudnn_convolution", "mkldnn_convolution", "conv2d", "conv1d", "conv3d", "_int_mm", "_weight_int4pack_mm"}
ATTENTION_OPS = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu", "_flash_attention_forward",
                 "_efficient_attention_forward"}
NORM_OPS = {"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm", "batch_norm",
            "native_batch_norm", "_batch_norm_impl_index", "cudnn_batch_norm", "instance_norm", "softmax", "_softmax",
            "log_softmax", "_log_softmax", "_safe_softmax"}
REDUCTION_OPS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm", "linalg_vector_norm", "var", "std",
                 "var_mean", "std_mean", "prod", "all", "any", "cumsum", "topk", "sort", "logsumexp"}
COPY_OPS = {"copy_", "to", "_to_copy", "clone", "contiguous", "cat", "stack", "index_select", "embedding", "gather", "index",
            "slice_scatter", "repeat", "expand_as"}
ELEMENTWISE_OPS = {"add", "sub", "rsub", "mul", "div", "pow", "rsqrt", "sqrt", "exp", "log", "neg", "abs", "silu", "gelu", "relu",
                   "sigmoid", "tanh", "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "fill", "zero", "threshold",
                   "threshold_backward", "dropout", "native_dropout", "cos", "sin", "reciprocal", "maximum", "minimum", "eq", "ne",
                   "lt", "le", "gt", "ge", "lerp", "addcmul", "addcdiv", "erf", "hardtanh", "leaky_relu", "softplus", "mse_loss",
                   "silu_backward", "gelu_backward", "sigmoid_backward", "tanh_backward", "exp2", "log1p", "expm1", "square",
                   "bitwise_and", "bitwise_or", "logical_not", "sign", "floor", "ceil", "round", "trunc", "normal", "uniform",
                   "bernoulli", "triu", "tril", "ones_like", "zeros_like", "full", "arange"}
OP_CLASSES: tuple[tuple[KernelClass, set[str]], ...] = (
    ("gemm", GEMM_OPS), ("attention", ATTENTION_OPS), ("normalization", NORM_OPS), ("reduction", REDUCTION_OPS),
    ("memory copy", COPY_OPS), ("elementwise", ELEMENTWISE_OPS),
)
COMPUTE_CLASSES = ("gemm", "attention")
FUSABLE_CLASSES = ("elementwise", "normalization", "reduction", "memory copy")


@lru_cache(maxsize=4096)
def base_name(op_name: str) -> str:
    """'aten::add_' → 'add'; '_foreach_add_' → 'add'; 'aten::copy_' stays 'copy_' (its own op, not an in-place add)."""
    name = op_name.rsplit("::", 1)[-1]
    if name == "copy_":
        return name
    name = name.removeprefix("_foreach_")
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


@lru_cache(maxsize=4096)
def op_class(op_name: str) -> KernelClass:
    if op_name.startswith(("c10d::", "nccl:", "record_param_comms")):
        return "communication"
    name = base_name(op_name)
    for cls, names in OP_CLASSES:
        if name in names or op_name.rsplit("::", 1)[-1] in names:
            return cls
    return "other"


@lru_cache(maxsize=4096)
def kernel_class(kernel_name: str, kind: str = "kernel", op_name: str | None = None) -> KernelClass:
    """The class of one device activity: a copy or set is a memory copy; a kernel by its name, else by its op."""
    if kind != "kernel":
        return "memory copy"
    inductor = inductor_kernel(kernel_name)
    if inductor is not None:  # its kind decides, not the op names it fused (a pointwise prologue of attention is pointwise)
        return "gemm" if inductor.kind == "GEMM template" else "normalization" if inductor.is_norm or "softmax" in inductor.fused \
            else "reduction" if "reduction" in inductor.kind else "elementwise"
    for cls, pattern in KERNEL_RULES:
        if pattern.search(kernel_name):
            return cls
    return op_class(op_name) if op_name else "other"


_NAMESPACES = re.compile(r"\(anonymous namespace\)::|\b(?:at::native::|at::cuda::|at::|c10::|std::|cub::CUB_\w+::)")
_LAMBDA = re.compile(r"::\{lambda\([^{}]*\)#\d+\}(?:::operator\(\)\(\) const)?")
_PARENS = re.compile(r"(?<=[\w>])\(([^()]+)\)")  # an argument list right after a name, not "(Host -> Device)"


@lru_cache(maxsize=4096)
def short_name(kernel_name: str, limit: int = 70) -> str:
    """A kernel's name as a person reads it: no 'void', namespaces, lambdas or parameter lists (the trace keeps the full name)."""
    name = kernel_name.removeprefix("void ")
    if name.endswith(")"):  # drop the parameter list: the last top-level (...)
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i] if i > 0 and not name[i - 1].isspace() else name  # 'Memcpy HtoD (Host -> Device)' keeps its words
                break
    name = _LAMBDA.sub("", _NAMESPACES.sub("", name))
    while _PARENS.search(name):
        name = _PARENS.sub("()", name)
    return name if len(name) <= limit else name[: limit - 1] + "…"
