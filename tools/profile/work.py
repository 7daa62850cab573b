"""Bytes and flops an op must move and compute, from its recorded shapes and dtypes (one call).

Each model counts the compulsory traffic: every input read once, every output written once, nothing
re-read from DRAM. GEMM flops are 2·M·N·K (a bias add is left out: under 1/K of the work); attention is
two GEMMs, 4·B·H·S·Skv·D, over the causal triangle when the op was causal; elementwise ops count one
flop per output element, norms 5 (mean, variance, scale, shift, normalize) and softmax 5: conventions,
like TraceLens's, that matter only for intensity. Copies count zero flops.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, replace

from hyperloom.tools.profile.classify import base_name, op_class
from hyperloom.tools.profile.tensors import Tensor, arguments, broadcast, concrete, scalar_type
from hyperloom.tools.profile.trace import Op


@dataclass(frozen=True)
class Work:
    bytes_moved: int
    flops: int
    output: Tensor | None  # the tensor the op writes (for fusion: what the next op reads)
    model: str
    reads: tuple[Tensor, ...] = ()  # the tensors it reads (copy_ reads only its source; fill_ and the like none)


class WorkCache:
    """op_work once per distinct call (name, shapes, dtypes, scalars): a long trace repeats the same few hundred."""

    def __init__(self) -> None:
        self._by_key: dict[tuple, Work | None] = {}
        self._by_op: dict[int, Work | None] = {}

    def __call__(self, op: Op) -> Work | None:
        found = self._by_op.get(id(op), False)
        if found is not False:
            return found
        key = (op.name, repr(op.dims), repr(op.types), repr(op.concrete))
        if key not in self._by_key:
            self._by_key[key] = op_work(op)
        work = self._by_op[id(op)] = self._by_key[key]
        return work


def op_work(op: Op) -> Work | None:
    """The work of one call of `op`, or None when no model applies or the shapes are missing."""
    tensors = arguments(op)
    if not any(t is not None for t in tensors):
        return None
    name = base_name(op.name)
    try:
        work = _model(op, name, op_class(op.name), tensors)
    except (IndexError, KeyError, ValueError, AttributeError):
        return None  # shapes that do not fit the op's signature: no model rather than a wrong one
    if work is None:
        return None
    read = tensors[1:2] if name == "copy_" else [] if name in WRITE_ONLY else tensors
    return replace(work, reads=tuple(t for t in read if t is not None))


def _model(op: Op, name: str, cls: str, tensors: list[Tensor | None]) -> Work | None:
    if cls == "gemm":
        return _convolution(op, name, tensors) if name in CONV_ARGUMENTS else _gemm(name, tensors)
    if cls == "attention":
        return _attention(op, tensors)
    if cls == "normalization":
        return _norm(name, tensors)
    if cls == "reduction":
        return _reduction(op, name, tensors)
    if cls == "memory copy":
        return _copy(op, name, tensors)
    if cls == "elementwise":
        return _elementwise(op, name, tensors)
    return None


# Where each convolution op takes its stride, padding, dilation and groups (aten's signatures): cudnn_convolution puts
# padding before stride and has no bias.
CONV_ARGUMENTS = {"convolution": (3, 4, 5, 8), "_convolution": (3, 4, 5, 8), "conv2d": (3, 4, 5, 6), "conv1d": (3, 4, 5, 6),
                  "conv3d": (3, 4, 5, 6), "cudnn_convolution": (3, 2, 4, 5), "mkldnn_convolution": (4, 3, 5, 6)}


def _convolution(op: Op, name: str, t: list[Tensor | None]) -> Work | None:
    """A forward convolution: 2·N·O·(C/groups)·prod(kernel)·prod(output spatial) flops; input, weight (and bias) read,
    output written once. The output's size from the stride, padding and dilation the op was given; a transposed
    convolution or arguments that do not parse: no model."""
    x, w = t[0], t[1]
    where = CONV_ARGUMENTS.get(name)
    if where is None or x is None or w is None or len(x.dims) != len(w.dims) or len(x.dims) < 3 or (name in ("convolution", "_convolution")
                                                                                                    and concrete(op, 6) == "True"):
        return None
    rank = len(x.dims) - 2
    stride, padding, dilation = (_ints(concrete(op, i), rank, default) for i, default in zip(where[:3], (1, 0, 1)))
    groups = int(concrete(op, where[3]) or 1)
    if stride is None or dilation is None:
        return None
    kernel = w.dims[2:]
    if padding is None:  # 'same' or 'valid' (conv2d's string overload)
        text = (concrete(op, where[1]) or "").strip("'\"")
        padding = tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel)) if text == "same" else (0,) * rank if text == "valid" else None
        if padding is None:
            return None
    spatial = tuple((size + 2 * p - d * (k - 1) - 1) // s + 1 for size, p, d, k, s in zip(x.dims[2:], padding, dilation, kernel, stride))
    if min(spatial, default=0) < 1:
        return None
    out = x.like((x.dims[0], w.dims[0], *spatial))
    bias = t[2] if name not in ("cudnn_convolution",) and len(t) > 2 else None
    flops = 2 * x.dims[0] * w.dims[0] * (x.dims[1] // max(groups, 1)) * math.prod(kernel) * math.prod(spatial)
    read = sum(v.nbytes for v in (x, w, bias) if v is not None)
    return Work(read + out.nbytes, flops, out,
                f"{name}: 2·N·O·(C/groups)·prod(kernel)·prod(output) flops; input, weight, bias read and output written once")


def _ints(text: str | None, rank: int, default: int) -> tuple[int, ...] | None:
    """'[2, 2]' or '2' as `rank` ints; missing: `default` each; anything else (a string padding): None."""
    if text is None:
        return (default,) * rank
    values = [v.strip() for v in text.strip("[]()").split(",") if v.strip()]
    if not values or not all(v.lstrip("-").isdigit() for v in values):
        return None
    ints = tuple(int(v) for v in values)
    return ints * rank if len(ints) == 1 else ints if len(ints) == rank else None


def _gemm(name: str, t: list[Tensor | None]) -> Work | None:
    if name in ("mm", "_scaled_mm", "_int_mm"):
        a, b, extra = t[0], t[1], []
    elif name == "addmm":
        a, b, extra = t[1], t[2], [t[0]]
    elif name in ("bmm", "matmul"):
        a, b, extra = t[0], t[1], []
    elif name == "baddbmm":
        a, b, extra = t[1], t[2], [t[0]]
    elif name == "linear":
        a, w, extra = t[0], t[1], [t[2]] if len(t) > 2 else []
        n, k = w.dims
        m = math.prod(a.dims[:-1])
        out = a.like(a.dims[:-1] + (n,))
        return _gemm_work(m, n, k, 1, [a, w, *extra], out, "linear: 2·M·N·K flops; x, weight, bias read and y written once")
    else:
        return None
    if a is None or b is None or len(a.dims) < 2 or len(b.dims) < 2:
        return None
    m, k, n = a.dims[-2], a.dims[-1], b.dims[-1]
    if len(a.dims) > 2 or len(b.dims) > 2:
        batch = broadcast([a.dims[:-2], b.dims[:-2]])
        if name == "matmul" and len(b.dims) == 2:  # [..., M, K] @ [K, N] folds the batch into M
            m, batch = math.prod(a.dims[:-1]), ()
        out = a.like(batch + (m, n))
        return _gemm_work(m, n, k, math.prod(batch), [a, b, *extra], out,
                          f"{name}: 2·batch·M·N·K flops; operands read and output written once")
    return _gemm_work(m, n, k, 1, [a, b, *extra], a.like((m, n)), f"{name}: 2·M·N·K flops; operands read and output written once")


def _gemm_work(m: int, n: int, k: int, batch: int, inputs: list[Tensor | None], out: Tensor, model: str) -> Work:
    read = sum(x.nbytes for x in inputs if x is not None)
    return Work(read + out.nbytes, 2 * batch * m * n * k, out, model)


CAUSAL_ARGUMENT = {"scaled_dot_product_attention": 5, "_scaled_dot_product_flash_attention": 4,
                   "_scaled_dot_product_efficient_attention": 6, "_scaled_dot_product_cudnn_attention": 6,
                   "_scaled_dot_product_flash_attention_for_cpu": 4, "_flash_attention_forward": 8}
HEADS_SECOND = {"_flash_attention_forward": False, "_efficient_attention_forward": False}  # these take [B, S, H, D]


def _attention(op: Op, t: list[Tensor | None]) -> Work | None:
    name = base_name(op.name)
    q, k, v = t[0], t[1], t[2]
    if q is None or k is None or v is None or len(q.dims) != 4:
        return None
    if HEADS_SECOND.get(name, True):
        b, h, s, d = q.dims
        s_kv, d_v = k.dims[2], v.dims[3]
    else:
        b, s, h, d = q.dims
        s_kv, d_v = k.dims[1], v.dims[3]
    if name == "_efficient_attention_forward":
        causal = concrete(op, 9) in ("1", "2")
    else:
        index = CAUSAL_ARGUMENT.get(name)
        causal = index is not None and concrete(op, index) == "True"
    pairs = s * s_kv - (s * (s - 1)) // 2 if causal and s <= s_kv else s * s_kv  # query-key pairs computed
    out = q.like(q.dims[:-1] + (d_v,))
    flops = 2 * b * h * pairs * (d + d_v)
    mask = "causal triangle" if causal else "every query-key pair"
    return Work(q.nbytes + k.nbytes + v.nbytes + out.nbytes, flops, out,
                f"{name}: 2·B·H·pairs·(D + Dv) flops over the {mask}; q, k, v read and output written once")


def _norm(name: str, t: list[Tensor | None]) -> Work | None:
    x = t[0]
    if x is None:
        return None
    out = x
    extra = [w for w in t[1:] if w is not None]
    per_element = 4 if "rms" in name else 5
    return Work(x.nbytes + out.nbytes + sum(w.nbytes for w in extra), per_element * x.numel, out,
                f"{name}: input and parameters read, output written once; {per_element} flops per element")


REDUCED_DIMS_ARGUMENT = {"linalg_vector_norm": 2, "norm": 2}


def _reduction(op: Op, name: str, t: list[Tensor | None]) -> Work | None:
    x = t[0]
    if x is None:
        return None
    text = concrete(op, REDUCED_DIMS_ARGUMENT.get(name, 1))
    try:
        dims = ast.literal_eval(text) if text else None
    except (ValueError, SyntaxError):
        dims = None
    if isinstance(dims, int):
        dims = [dims]
    if isinstance(dims, list) and dims and all(isinstance(d, int) for d in dims):
        kept = tuple(1 if (i in {d % len(x.dims) for d in dims}) else size for i, size in enumerate(x.dims)) if x.dims else ()
    else:
        kept = ()  # all dimensions reduced
    out = x.like(kept)
    return Work(x.nbytes + out.nbytes, x.numel, out, f"{name}: input read once, the reduced output written; one flop per input element")


def _copy(op: Op, name: str, t: list[Tensor | None]) -> Work | None:
    if name == "copy_":
        dst, src = t[0], t[1]
        if dst is None or src is None:
            return None
        return Work(dst.nbytes + src.nbytes, 0, dst, "copy_: source read, destination written")
    if name == "embedding":
        weight, index = t[0], t[1]
        if weight is None or index is None:
            return None
        out = weight.like(index.dims + weight.dims[-1:])
        return Work(index.nbytes + 2 * out.nbytes, 0, out, "embedding: indices read, one row read and written per index")
    x = t[0]
    if x is None or name not in ("to", "_to_copy", "clone", "contiguous"):
        return None
    out = x.like(dtype=scalar_type(op, 1) if name in ("to", "_to_copy") else None)
    return Work(x.nbytes + out.nbytes, 0, out, f"{name}: input read, output written")


WRITE_ONLY = {"fill", "zero", "normal", "uniform", "bernoulli", "full", "ones_like", "zeros_like", "arange"}


def _elementwise(op: Op, name: str, t: list[Tensor | None]) -> Work | None:
    present = [x for x in t if x is not None]
    if not present:
        return None
    out = present[0].like(broadcast([x.dims for x in present]))
    if name in WRITE_ONLY:
        return Work(out.nbytes, 0, out, f"{name}: output written once")
    return Work(sum(x.nbytes for x in present) + out.nbytes, out.numel, out,
                f"{name}: each tensor input read once, the broadcast output written once; one flop per output element")
