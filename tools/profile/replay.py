"""The reference of a hand-off draft: Python source that runs the recorded torch ops, in the kernel spec's contract
(inputs and shape variables in, {output name: array} out), so the ops the model ran are what a replacement must match.

Three kinds. A hotspot's reference calls its one op with the recorded arguments. A chain the fusion library matched
replays the chain op by op on the library spec's buffers, wired as the pattern reads them (library.py checked every op).
Any other chain is replayed from its recorded shapes alone: traces carry shapes, not tensor identities, so each op reads
the previous op's output where the shapes allow, and every other tensor operand is an input of its own (a kernel that
handles them apart is right for the model too, where two of them are one tensor). A Python scalar the trace did not record
is a scalar argument of the spec, still TODO there, which the reference reads from the kernel.yaml beside it.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass, field

from hyperloom.tools.profile.classify import base_name
from hyperloom.tools.profile.library import CONVERT, Step
from hyperloom.tools.profile.tensors import NUMPY_NAMES, Tensor, arguments, concrete
from hyperloom.tools.profile.trace import Op

TORCH_NAMES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16", "long int": "int64",
               "long": "int64", "int": "int32", "short int": "int16", "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
               "c10::Float8_e4m3fn": "float8_e4m3fn", "c10::Float8_e5m2": "float8_e5m2", "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
               "c10::Float8_e5m2fnuz": "float8_e5m2fnuz"}
HALF_TYPES = ("c10::BFloat16", "c10::Half")

PRELUDE = '''import numpy as np
import torch

NARROW = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}  # ml_dtypes arrays in the spec contract


def tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """A spec input as a torch tensor of `dtype`: an ml_dtypes array (bfloat16, fp8) by its bits, torch cannot take it as is."""
    array = np.ascontiguousarray(array)
    if array.dtype.name in NARROW:
        return torch.from_numpy(array.view(f"i{array.itemsize}")).view(getattr(torch, array.dtype.name)).to(dtype)
    return torch.from_numpy(array).to(dtype)


def array(t: torch.Tensor) -> np.ndarray:
    """A torch result for the gate: half and fp8 floats as float32 (exact), which the worker rounds back to the declared dtype."""
    t = t.detach().contiguous()
    return t.float().numpy() if t.is_floating_point() and t.element_size() < 4 else t.numpy()
'''

CALL = '''

def call(packet, values: list) -> object:
    """The op with its recorded arguments in order; those its schema makes keyword-only go by name."""
    overloads = [getattr(packet, name) for name in sorted(packet.overloads(), key=lambda n: n != "default")]
    schema = next(o._schema for o in overloads if len(o._schema.arguments) >= len(values))
    args = [v for a, v in zip(schema.arguments, values) if not a.kwarg_only]
    kwargs = {a.name: v for a, v in zip(schema.arguments, values) if a.kwarg_only}
    out = packet(*args, **kwargs)
    return out[0] if isinstance(out, (tuple, list)) else out
'''

SCALARS = '''

def scalar(name: str) -> float:
    """A scalar the trace did not record, as filled in once in the kernel.yaml beside this file (args[].value)."""
    import yaml
    from pathlib import Path

    spec = yaml.safe_load(Path(__file__).with_name("kernel.yaml").read_text())
    value = next(a["value"] for a in spec["args"] if a.get("name") == name)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"kernel.yaml's scalar {name} is {value!r}: write its number there (read it from the model)") from None
'''


@dataclass
class Input:
    """A buffer the reference reads: its spec name, recorded tensor, and where in the trace it came from."""

    name: str
    tensor: Tensor
    source: str


@dataclass
class Replay:
    source: str
    inputs: list[Input]
    output: Tensor | None = None
    unrecorded: list[tuple[str, str]] = field(default_factory=list)  # (scalar name, where it sits in the chain)


def torch_dtype(t: Tensor) -> str:
    return f"torch.{TORCH_NAMES[t.dtype]}"


def _literal(text: str | None) -> str:
    """A scalar argument as Python source: numbers, booleans and lists as recorded; anything else None."""
    if text is None:
        return "None"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return "None"
    return repr(value) if isinstance(value, (int, float, bool, list, tuple)) else "None"


def _packet(name: str) -> str | None:
    namespace, _, function = name.rpartition("::")
    if not namespace.isidentifier() or not function.isidentifier() or keyword.iskeyword(function) or keyword.iskeyword(namespace):
        return None
    return f"torch.ops.{namespace}.{function}"


def _header(what: str, trace_label: str, how: str) -> list[str]:
    return [f'"""Reference for {what}, written by hyperloom profile from {trace_label}. {how}"""', ""]


def _finish(lines: list[str]) -> str:
    source = "\n".join(lines) + "\n"
    ast.parse(source)  # a reference that does not parse is a bug here, not the user's problem
    return source


# --- one op ----------------------------------------------------------------------------------------------------------

def op_reference(op: Op, names: list[str], kind: str, what: str, trace_label: str) -> str | None:
    """A hotspot's op at its recorded arguments; None when an argument has no torch dtype or the op no torch name.
    A GEMM or attention op in a half type runs in float32: torch's CPU kernels for them take minutes at model sizes,
    and the GPU kernel accumulates in float32 too."""
    tensors = arguments(op)
    packet = _packet(op.name)
    if packet is None or any(t is not None and t.dtype not in TORCH_NAMES for t in tensors):
        return None
    if any(t is not None and not t.dims and concrete(op, i) is None for i, t in enumerate(tensors)):
        return None  # a Python number the trace did not record: no reference can know it
    tensors = [None if t is not None and not t.dims else t for t in tensors]  # recorded Python numbers go in as literals
    wide = kind in ("gemm", "attention") and any(t is not None and t.dtype in HALF_TYPES for t in tensors)
    how = ("The torch op itself is the reference: a replacement kernel must match what it returns at these shapes"
           + (" (computed in float32 from the recorded half-precision inputs, the result rounded to the output's dtype by the gate)."
              if wide else "."))
    lines = _header(what, trace_label, how) + PRELUDE.splitlines() + CALL.splitlines() + ["", ""]
    dims = {n: list(t.dims) for n, t in zip(names, tensors) if t is not None}
    dtypes = {n: "torch.float32" if wide and t.dtype in HALF_TYPES else torch_dtype(t) for n, t in zip(names, tensors) if t is not None}
    lines += ["SHAPES = {" + ", ".join(f"{n!r}: {d}" for n, d in dims.items()) + "}",
              "DTYPES = {" + ", ".join(f"{n!r}: {d}" for n, d in dtypes.items()) + "}", "", "",
              "def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:",
              "    args = {name: tensor(inputs[name], DTYPES[name]).reshape(SHAPES[name]) for name in SHAPES}"]
    values = [f"args[{n!r}]" if t is not None else _literal(concrete(op, i)) for i, (n, t) in enumerate(zip(names, tensors))]
    while values and values[-1] == "None":
        values.pop()
    lines += [f"    return {{\"out\": array(call({packet}, [{', '.join(values)}]))}}"]
    return _finish(lines)


# --- a chain the library matched -------------------------------------------------------------------------------------

def _norm_lines(steps: list[Step], h: str) -> list[str]:
    """HF's RMSNorm as recorded, on the row tensor named `h` (weight the [cols] buffer); ends with y."""
    out, muls, converts = [], 0, 0
    for s in steps:
        tag = f"  # op {s.position} {s.name}"
        if s.op in CONVERT:
            converts += 1
            out.append(f"    {h} = {h}.to({torch_dtype(s.output)}){tag}"
                       + (" (up to float32)" if converts == 1 and muls == 0 else " (back to the input's dtype)"))
        elif s.op == "pow":
            out.append(f"    v = torch.ops.aten.pow({h}, {_literal(s.scalar(1)) if s.scalar(1) else 2}){tag}")
        elif s.op == "mean":
            out.append(f"    v = torch.ops.aten.mean(v, [-1], True){tag}")  # the last axis (library.py checked), in the 2-D layout
        elif s.op == "add":
            out.append(f"    v = torch.ops.aten.add(v, EPS){tag}: eps not recorded (a Python float), ASSUMED")
        elif s.op == "rsqrt":
            out.append(f"    v = torch.ops.aten.rsqrt(v){tag}")
        elif s.op == "mul" and muls == 0:
            muls += 1
            out.append(f"    {h} = torch.ops.aten.mul({h}, v){tag}")
        elif s.op == "mul":
            weight_first = len(s.reads[0].dims) == 1 and len(s.reads[1].dims) > 1  # the operands in their recorded order
            out.append(f"    y = torch.ops.aten.mul({'weight, ' + h if weight_first else h + ', weight'}){tag}")
    return out


def library_reference(kernel: str, steps: list[Step], dtypes: dict[str, str], eps: float | None, what: str, trace_label: str) -> str:
    """The recorded chain on the library spec's buffers (`dtypes`: spec buffer name → its recorded dtype, numpy's name), in the spec's
    2-D layout ([rows, cols]): every op of these chains works row by row, so the recorded leading dimensions do not matter."""
    how = ("It replays the recorded torch ops of the whole chain, in their order and dtypes, on the library spec's buffers: the"
           " eager chain the model ran is what the library kernel must match.")
    lines = _header(what, trace_label, how) + PRELUDE.splitlines() + ["", ""]
    if eps is not None:
        lines += [f"EPS = {eps!r}  # not recorded in the trace (a Python float): ASSUMED, the model config's rms_norm_eps", "", ""]
    lines += ["def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:"]
    for name, dtype in dtypes.items():
        if name not in ("y", "out"):
            lines.append(f"    {name} = tensor(inputs[{name!r}], torch.{dtype})")
    if kernel == "rmsnorm":
        lines += ["    h = x"] + _norm_lines(steps, "h") + ["    return {\"y\": array(y)}"]
    elif kernel == "add_rmsnorm":
        first = steps[0]
        lines += [f"    residual = torch.ops.aten.add(residual, x)  # op 1 {first.name}: the residual sum, written back"]
        lines += ["    h = residual"] + _norm_lines(steps[1:], "h") + ["    return {\"residual\": array(residual), \"y\": array(y)}"]
    else:  # silu_and_mul, gelu_and_mul: [gate | up] side by side in the spec
        act, product = steps[0], steps[1]
        extra = f", approximate={_literal(act.scalar(1))}" if act.op == "gelu" and act.scalar(1) else ""
        lines += ["    gate, up = x[:, : shape[\"d\"]], x[:, shape[\"d\"]:]",
                  f"    act = torch.ops.aten.{act.op}(gate{extra})  # op {act.position} {act.name}",
                  f"    out = torch.ops.aten.mul(act, up)  # op {product.position} {product.name}",
                  "    return {\"out\": array(out)}"]
    return _finish(lines)


# --- any other chain -------------------------------------------------------------------------------------------------

def _reads_previous(t: Tensor, previous: Tensor | None) -> bool:
    return previous is not None and t.dtype == previous.dtype and (t.dims == previous.dims or t.numel == previous.numel)


def chain_reference(ops: list[Op], outputs: list[Tensor], what: str, trace_label: str) -> Replay | None:
    """The chain replayed from its recorded shapes (see the module's docstring); None when an op has no torch name."""
    lines: list[str] = []
    inputs: list[Input] = []
    unrecorded: list[tuple[str, str]] = []
    previous: Tensor | None = None
    for position, (op, output) in enumerate(zip(ops, outputs), start=1):
        packet = _packet(op.name)
        tensors = arguments(op)
        if packet is None or any(t is not None and t.dtype not in TORCH_NAMES for t in tensors):
            return None
        values, linked = [], False
        for index, t in enumerate(tensors):
            if t is None:
                values.append(_literal(concrete(op, index)))
            elif not t.dims and concrete(op, index) is not None:  # a Python number, recorded
                values.append(_literal(concrete(op, index)))
            elif not t.dims:  # a Python number the trace did not record
                name = f"op{position}_arg{index}"
                unrecorded.append((name, f"op {position} {op.name}, argument {index} ({NUMPY_NAMES.get(t.dtype, t.dtype)})"))
                values.append(f"scalar({name!r})")
            elif base_name(op.name) == "copy_" and index == 0:  # the destination: written, not read
                values.append(f"torch.empty({list(t.dims)}, dtype={torch_dtype(t)})")
            elif not linked and _reads_previous(t, previous):
                linked = True
                values.append(f"v{position - 1}" if t.dims == previous.dims else f"v{position - 1}.reshape({list(t.dims)})")
            else:
                name = f"in{len(inputs)}"
                inputs.append(Input(name, t, f"op {position} {op.name}, argument {index}"))
                values.append(f"args[{name!r}]")
        while values and values[-1] == "None":
            values.pop()
        lines.append(f"    v{position} = call({packet}, [{', '.join(values)}])  # op {position} {op.name}")
        previous = output
    how = ("It replays the recorded torch ops of the chain in order. Traces record shapes, not tensor identities: each op"
           " reads the previous op's output where the shapes allow, and every other tensor operand is an input of its own (in0, in1, …).")
    body = _header(what, trace_label,
                   how) + PRELUDE.splitlines() + CALL.splitlines() + (SCALARS.splitlines() if unrecorded else []) + ["", ""]
    body += ["SHAPES = {" + ", ".join(f"{i.name!r}: {list(i.tensor.dims)}" for i in inputs) + "}",
             "DTYPES = {" + ", ".join(f"{i.name!r}: {torch_dtype(i.tensor)}" for i in inputs) + "}", "", "",
             "def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:",
             "    args = {name: tensor(inputs[name], DTYPES[name]).reshape(SHAPES[name]) for name in SHAPES}"]
    body += lines + [f"    return {{\"out\": array(v{len(ops)})}}"]
    return Replay(_finish(body), inputs, outputs[-1], unrecorded)
