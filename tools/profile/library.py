"""The fusion library matcher: a recorded chain of ops mapped to one of Hyperloom's own Triton kernels
(kernels/triton/), by its op pattern, shapes and dtypes, with each of the spec's arguments traced to where the
chain has it.

A chain matches a pattern whole or not at all: a library kernel that did part of a chain, or something close
to it, would be a silently wrong replacement. A chain that follows a pattern for a while and then departs
from it (another exponent, another axis, a dtype the eager module would not use) is refused with the reason,
which the hand-off lists as its TODO. The patterns are the eager chains of the modules LLMs are built from:
HF's Qwen2RMSNorm / LlamaRMSNorm (with and without the residual add before it) and the gated MLP's activation
times the up projection (SiLU or GELU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hyperloom.core.evidence import Tag
from hyperloom.tools.profile.classify import base_name
from hyperloom.tools.profile.models import LibraryArg, LibraryMatch
from hyperloom.tools.profile.tensors import NUMPY_NAMES, Tensor, concrete
from hyperloom.tools.profile.trace import Op

CONVERT = ("copy_", "to", "_to_copy")  # a dtype conversion: `.to()` is aten::to on a CPU thread, the copy_ it runs on a GPU stream
HALF = ("c10::BFloat16", "c10::Half")
RMS_EPS = 1e-6  # Qwen2's and Llama-3's rms_norm_eps
NEAR_MISS_OPS = 2  # a pattern whose ops fitted this far before the chain departed from it is worth naming


@dataclass(frozen=True)
class Step:
    """One op of a recorded chain: what it read and wrote (from its work model) and its recorded scalars."""

    position: int  # 1-based, as the report numbers the chain's ops
    name: str  # the op as the trace names it (aten::mul)
    op: str  # its base name (mul)
    reads: tuple[Tensor, ...]
    output: Tensor
    scalars: tuple[str | None, ...]  # "Concrete Inputs" per argument; () where the trace records none

    def scalar(self, index: int) -> str | None:
        return self.scalars[index] if index < len(self.scalars) else None

    def where(self) -> str:
        return f"op {self.position} {self.name}"


def step_of(position: int, op: Op, reads: tuple[Tensor, ...], output: Tensor) -> Step:
    scalars = tuple(concrete(op, i) for i in range(len(op.concrete or [])))
    return Step(position, op.name, base_name(op.name), reads, output, scalars)


class Mismatch(Exception):
    """The chain departs from a pattern after `progress` of its ops fitted, for `reason`."""

    def __init__(self, progress: int, reason: str) -> None:
        super().__init__(reason)
        self.progress, self.reason = progress, reason


class Cursor:
    """Reads a chain's steps in order; every expectation that fails is a Mismatch naming the op and the cause."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps, self.at = steps, 0

    def peek(self) -> str | None:
        return self.steps[self.at].op if self.at < len(self.steps) else None

    def take(self, *ops: str) -> Step:
        if self.at >= len(self.steps):
            raise Mismatch(self.at, f"the chain ends where {'/'.join(ops)} would follow")
        step = self.steps[self.at]
        if step.op not in ops:
            raise Mismatch(self.at, f"{step.where()} is {step.op} where the pattern has {'/'.join(ops)}")
        self.at += 1
        return step

    def require(self, condition: bool, reason: str, step: Step | None = None) -> None:
        """`reason` about `step` unless `condition` holds. Without a step it is about the op taken last, which then did not
        fit; a step named is checked late, once the ops after it fitted (a near miss of the whole pattern)."""
        if not condition:
            raise Mismatch(self.at if step else self.at - 1, f"{(step or self.steps[self.at - 1]).where()}: {reason}")

    def end(self) -> None:
        if self.at < len(self.steps):
            rest = ", ".join(s.name for s in self.steps[self.at:])
            raise Mismatch(self.at, f"the chain goes on after the pattern ({rest}): the library kernel would leave those ops out")


def _dtype(t: Tensor) -> str:
    return NUMPY_NAMES.get(t.dtype, t.dtype)


def _rows(dims: tuple[int, ...]) -> int:
    rows = 1
    for size in dims[:-1]:
        rows *= size
    return rows


def _buffer(name: str, source: str, t: Tensor) -> LibraryArg:
    return LibraryArg(name=name, source=source, dims=list(t.dims), dtype=_dtype(t), tag=Tag.MEASURED)


def _scalar(name: str, source: str, value: float, tag: Tag) -> LibraryArg:
    return LibraryArg(name=name, source=source, value=value, tag=tag)


@dataclass
class _Norm:
    x: Tensor  # what the norm normalizes, in the model's dtype
    weight: Tensor
    weight_source: str
    y: Tensor
    y_source: str
    notes: list[str]


def _rms_norm(c: Cursor) -> _Norm:
    """HF's RMSNorm: [to(float32)] pow(2) mean(-1, keepdim) add(eps) rsqrt mul [to(dtype)] mul(weight)."""
    notes: list[str] = []
    upcast = None
    if c.peek() in CONVERT:
        upcast = c.take(*CONVERT)
        x = upcast.reads[0]
        c.require(upcast.output.dtype == "float" and upcast.output.dims == x.dims and x.dtype in HALF,
                  f"converts {x.text()} to {upcast.output.text()}, not a half-precision tensor to float32 of its shape")
    power = c.take("pow")
    if upcast is None:
        x = power.reads[0]
        c.require(x.dtype == "float", f"squares a {_dtype(x)} tensor: HF's norm upcasts to float32 first, so a {_dtype(x)} model would "
                                      "show a conversion")
    hidden = upcast.output if upcast else x
    c.require(power.reads[0].dims == hidden.dims and power.output.dims == hidden.dims, "does not square the normalized tensor elementwise")
    exponent = power.scalar(1)
    c.require(exponent in (None, "2", "2.0"), f"raises to the power {exponent}, not 2")
    if exponent is None:
        notes.append("pow's exponent is not recorded in the trace: 2 ASSUMED")
    mean = c.take("mean")
    axes, keepdim = mean.scalar(1), mean.scalar(2)
    c.require(mean.reads[0].dims == hidden.dims and mean.output.dims == hidden.dims[:-1] + (1,),
              f"reduces {mean.reads[0].text()} to {mean.output.text()}, not over the last dimension with keepdim")
    c.require(axes in (None, "[-1]", f"[{len(hidden.dims) - 1}]") and keepdim in (None, "True"),
              f"averages over {axes} (keepdim {keepdim}), not [-1] with keepdim")
    if axes is None:
        notes.append("mean's dimension is not recorded in the trace: -1 ASSUMED from its output shape")
    variance = mean.output
    add = c.take("add")
    tensors = [t for t in add.reads if t.dims]  # a Python float is recorded as a 0-dim double
    c.require(len(tensors) == 1 and tensors[0].dims == variance.dims,
              "adds a tensor to the mean square where the pattern adds the scalar eps")
    root = c.take("rsqrt")
    c.require(root.output.dims == variance.dims, "is not the reciprocal root of the mean square")
    scale = c.take("mul")
    c.require(sorted(t.dims for t in scale.reads) == sorted([hidden.dims, variance.dims]), "does not scale the row by its reciprocal root")
    normed = scale.output
    if upcast is not None:
        down = c.take(*CONVERT)
        c.require(down.reads[0].dims == hidden.dims and down.output.dtype == x.dtype,
                  f"converts to {_dtype(down.output)}, not back to the input's {_dtype(x)}")
        normed = down.output
    weighted = c.take("mul")
    weights = [t for t in weighted.reads if t.dims == hidden.dims[-1:]]
    others = [t for t in weighted.reads if t.dims == hidden.dims]
    c.require(len(weighted.reads) == 2 and len(weights) == 1 and len(others) == 1 and others[0].dtype == normed.dtype,
              f"multiplies {', '.join(t.text() for t in weighted.reads)}, not the normalized row by a weight of [{hidden.dims[-1]}]")
    return _Norm(x, weights[0], f"{weighted.where()}, its [{hidden.dims[-1]}] operand", weighted.output, f"{weighted.where()}, its output",
                 notes)


def _norm_args(norm: _Norm) -> list[LibraryArg]:
    eps_note = (f"not recorded in the trace (a Python float): {RMS_EPS:g}, Qwen2's and Llama-3's rms_norm_eps; read it from the "
                "model's config")
    return [_buffer("weight", norm.weight_source, norm.weight), _buffer("y", norm.y_source, norm.y),
            _scalar("n_cols", "the last dimension of x", norm.x.dims[-1], Tag.MEASURED), _scalar("eps", eps_note, RMS_EPS, Tag.ASSUMED)]


def _match_rmsnorm(steps: list[Step]) -> LibraryMatch:
    c = Cursor(steps)
    norm = _rms_norm(c)
    c.end()
    source = f"{steps[0].where()}, its source" if steps[0].op in CONVERT else f"{steps[0].where()}, its input"
    return _found("rmsnorm", "rmsnorm_kernel", "rmsnorm.py:rmsnorm(x, weight, eps)", "HF Qwen2RMSNorm / LlamaRMSNorm, eager",
                  norm.x, {"rows": _rows(norm.x.dims), "cols": norm.x.dims[-1]}, [_buffer("x", source, norm.x), *_norm_args(norm)],
                  norm.notes)


def _match_add_rmsnorm(steps: list[Step]) -> LibraryMatch:
    c = Cursor(steps)
    add = c.take("add")
    norm = _rms_norm(c)
    c.end()
    # checked once the ops have all fitted, so a chain of the right ops with a wrong add is named as a near miss
    c.require(len(add.reads) == 2 and add.reads[0].dims == add.reads[1].dims == add.output.dims
              and add.reads[0].dtype == add.reads[1].dtype, "is not the sum of two tensors of one shape and dtype (the residual add)", add)
    c.require(add.scalar(2) in (None, "1"), f"scales its second operand by alpha={add.scalar(2)}", add)
    c.require(norm.x.dims == add.output.dims and norm.x.dtype == add.output.dtype, "normalizes something other than the residual sum", add)
    args = [_buffer("x", f"{add.where()}, its second operand (the sublayer's output)", add.reads[1]),
            _buffer("residual", f"{add.where()}, its first operand; the sum is written back into it (its output)", add.reads[0]),
            *_norm_args(norm)]
    return _found("add_rmsnorm", "add_rmsnorm_kernel", "add_rmsnorm.py:add_rmsnorm(x, residual, weight, eps)",
                  "HF Qwen2 / Llama decoder layer: residual + hidden, then the RMSNorm of the sum, eager", add.output,
                  {"rows": _rows(add.output.dims), "cols": add.output.dims[-1]}, args, norm.notes)


def _gated(activation: str, kernel: str, launcher: str, split: str,
           check: Callable[[Cursor, Step], None]) -> Callable[[list[Step]], LibraryMatch]:
    """The gated MLP's activation times the up projection: act(gate) then mul(act, up), gate and up of one shape and dtype."""

    def match(steps: list[Step]) -> LibraryMatch:
        c = Cursor(steps)
        act = c.take(activation)
        gate = act.reads[0]
        c.require(len(act.reads) == 1 and act.output.dims == gate.dims and gate.dtype == act.output.dtype,
                  f"is not {activation} of one tensor, elementwise")
        product = c.take("mul")
        up = [t for t in product.reads if t.numel == gate.numel and t.dtype == gate.dtype]
        c.require(len(product.reads) == 2 and len(up) == 2 and product.output.numel == gate.numel,
                  f"multiplies {', '.join(t.text() for t in product.reads)}, not the activation by an up projection of its shape and dtype")
        c.end()
        check(c, act)  # once the ops have all fitted: a wrong variant of the activation is a near miss
        d = gate.dims[-1]
        args = [LibraryArg(name="x", source=f"[gate | up]: {act.where()}'s input and {product.where()}'s other operand, side by side "
                           f"in the spec; in the model, {split} takes them as two tensors",
                           dims=[_rows(gate.dims), 2 * d], dtype=_dtype(gate), tag=Tag.MEASURED),
                _buffer("out", f"{product.where()}, its output", product.output),
                _scalar("d", "the last dimension of the gate", d, Tag.MEASURED)]
        return _found(kernel, f"{kernel}_kernel", launcher, f"gated MLP: {activation}(gate) * up, eager", gate,
                      {"rows": _rows(gate.dims), "d": d}, args, [])
    return match


def _exact_gelu(c: Cursor, act: Step) -> None:
    approximate = act.scalar(1)
    c.require(approximate in (None, "none"),
              f"uses approximate={approximate!r}: the spec gates erf's exact GELU (the launcher takes approximate='tanh')", act)


PATTERNS: list[tuple[str, Callable[[list[Step]], LibraryMatch]]] = [
    ("add_rmsnorm", _match_add_rmsnorm),
    ("rmsnorm", _match_rmsnorm),
    ("silu_and_mul", _gated("silu", "silu_and_mul", "silu_and_mul.py:silu_and_mul(x)", "silu_and_mul.py:silu_mul(gate, up)",
                            lambda c, act: None)),
    ("gelu_and_mul", _gated("gelu", "gelu_and_mul", "gelu_and_mul.py:gelu_and_mul(x, approximate)",
                                   "gelu_and_mul.py:gelu_mul(gate, up, approximate)", _exact_gelu)),
]


def _found(kernel: str, entry: str, launcher: str, pattern: str, x: Tensor, shape: dict[str, int], args: list[LibraryArg],
           notes: list[str]) -> LibraryMatch:
    if x.dtype != "float":
        notes = [*notes, f"the chain runs in {_dtype(x)}; the library spec gates float32 and the hand-off draft {_dtype(x)} (the same "
                         f"kernel), the launcher takes {_dtype(x)} tensors"]
    return LibraryMatch(kernel=kernel, spec_folder=f"kernels/triton/{kernel}", entry=entry, launcher=launcher, pattern=pattern,
                        dtype=_dtype(x), shape=shape, args=args, notes=notes)


def match_chain(steps: list[Step]) -> tuple[LibraryMatch | None, str | None]:
    """(the library kernel the whole chain is, or None; why the closest pattern was refused, where one came near)."""
    closest: tuple[int, str, str] | None = None
    for kernel, match in PATTERNS:
        try:
            return match(steps), None
        except Mismatch as miss:
            if miss.progress >= NEAR_MISS_OPS and (closest is None or miss.progress > closest[0]):
                closest = (miss.progress, kernel, miss.reason)
        except IndexError:  # an op with fewer tensors than the pattern reads: not this pattern
            continue
    if closest is None:
        return None, None
    return None, f"not the library's {closest[1]}: {closest[2]}"
