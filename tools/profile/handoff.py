"""The hand-off from a hotspot to the spec path: buffers at the recorded shapes, the metric, and a reference stub
that calls the torch op itself, so the op is the correctness reference of a replacement kernel."""

from __future__ import annotations

import ast
import keyword
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.classify import base_name
from hyperloom.tools.profile.group import WorkItem
from hyperloom.tools.profile.models import Handoff, Hotspot
from hyperloom.tools.profile.tensors import NUMPY_NAMES, Tensor, arguments, concrete

ARGUMENT_NAMES = {
    "mm": ["a", "b"], "bmm": ["a", "b"], "matmul": ["a", "b"], "addmm": ["bias", "a", "b"], "baddbmm": ["c", "a", "b"],
    "linear": ["x", "weight", "bias"], "scaled_dot_product_attention": ["q", "k", "v", "mask"], "layer_norm": ["x", "", "weight", "bias"],
    "native_layer_norm": ["x", "", "weight", "bias"], "rms_norm": ["x", "", "weight"], "_fused_rms_norm": ["x", "", "weight"],
    "copy_": ["dst", "src"], "embedding": ["weight", "indices"],
}
SPEC_DTYPES = {"c10::BFloat16": "uint16", "bool": "uint8"}  # kernel.yaml's dtypes are numpy's
TORCH_DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16", "long int": "int64",
                "int": "int32", "short int": "int16", "signed char": "int8", "unsigned char": "uint8", "bool": "bool"}


def _names(op_name: str, count: int) -> list[str]:
    known = ARGUMENT_NAMES.get(base_name(op_name), [])
    return [known[i] if i < len(known) and known[i] else f"in{i}" for i in range(count)]


def _literal(text: str | None) -> str:
    """A scalar argument as Python source: numbers, booleans and lists as recorded; anything else None."""
    if text is None:
        return "None"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return "None"
    return repr(value) if isinstance(value, (int, float, bool, list, tuple)) else "None"


def reference_stub(item: WorkItem, trace_label: str) -> str | None:
    """Python source of a reference(inputs, shape) that runs the op at the recorded shapes; None when a dtype has no torch name."""
    op = item.op
    tensors = arguments(op)
    names = _names(op.name, len(tensors))
    if any(t is not None and t.dtype not in TORCH_DTYPES for t in tensors):
        return None
    lines = [
        f'"""Reference for {item.label},',
        f"written by hyperloom profile from {trace_label}, in the kernel spec's contract. The torch op itself is the",
        "reference: a replacement kernel must match what it returns at these shapes and dtypes. numpy has no bfloat16, so",
        "a bfloat16 buffer is its bits as uint16 (as the spec declares it); other inputs are cast to the recorded dtype.",
        'The output comes back in the op\'s dtype (bfloat16 as uint16 bits)."""',
        "",
        "import numpy as np",
        "import torch",
        "",
        "SHAPES = {" + ", ".join(f"{n!r}: {list(t.dims)}" for n, t in zip(names, tensors) if t is not None) + "}",
        "DTYPES = {" + ", ".join(f"{n!r}: torch.{TORCH_DTYPES[t.dtype]}" for n, t in zip(names, tensors) if t is not None) + "}",
        "",
        "",
        "def call(packet, values: list) -> object:",
        '    """The op with its recorded arguments in order; those its schema makes keyword-only go by name."""',
        "    overloads = [getattr(packet, name) for name in sorted(packet.overloads(), key=lambda n: n != 'default')]",
        "    schema = next(o._schema for o in overloads if len(o._schema.arguments) >= len(values))",
        "    args = [v for a, v in zip(schema.arguments, values) if not a.kwarg_only]",
        "    kwargs = {a.name: v for a, v in zip(schema.arguments, values) if a.kwarg_only}",
        "    return packet(*args, **kwargs)",
        "",
        "",
        "def tensor(name: str, array: np.ndarray) -> torch.Tensor:",
        "    t = torch.from_numpy(np.ascontiguousarray(array))",
        "    if DTYPES[name] == torch.bfloat16 and array.dtype == np.uint16:",
        "        t = t.view(torch.bfloat16)  # bfloat16 bits",
        "    return t.to(DTYPES[name]).reshape(SHAPES[name])",
        "",
        "",
        "def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:",
        "    args = {name: tensor(name, inputs[name]) for name in SHAPES}",
    ]
    call = [f"args[{n!r}]" if t is not None else _literal(concrete(op, i)) for i, (n, t) in enumerate(zip(names, tensors))]
    while call and call[-1] == "None":
        call.pop()
    namespace, _, function = op.name.rpartition("::")
    if not namespace.isidentifier() or not function.isidentifier() or keyword.iskeyword(function):
        return None
    lines += [
        f"    out = call(torch.ops.{namespace}.{function}, [{', '.join(call)}])",
        "    out = (out[0] if isinstance(out, (tuple, list)) else out).contiguous()",
        "    return {\"out\": (out.view(torch.uint16) if out.dtype == torch.bfloat16 else out).numpy()}",
        "",
    ]
    source = "\n".join(lines)
    ast.parse(source)  # a stub that does not parse is a bug here, not the user's problem
    return source


def _buffer(name: str, tensor: Tensor, role: str) -> dict[str, str | list[int]]:
    """A kernel.yaml buffer argument at the recorded shape; bfloat16 travels as its bits (uint16), as numpy has no bfloat16."""
    buffer: dict[str, str | list[int]] = {"kind": "buffer", "name": name, "dtype": SPEC_DTYPES.get(tensor.dtype, NUMPY_NAMES.get(tensor.dtype, tensor.dtype)),
                                          "shape": list(tensor.dims), "role": role}
    if tensor.dtype == "c10::BFloat16":
        buffer["bits_of"] = "bfloat16"
    return buffer


def handoffs(ranked: list[tuple[Hotspot, WorkItem]], folder: Path, workspace: Workspace, trace_label: str, count: int = 3) -> list[Handoff]:
    """For the top `count` hotspots that a torch op launched: spec arguments, metric and a reference stub file."""
    out = []
    for spot, item in ranked:
        if len(out) == count or item.op is None or item.work is None or not item.op.name.startswith("aten::"):
            continue
        stub = reference_stub(item, trace_label)
        if stub is None:
            continue
        tensors = arguments(item.op)
        names = _names(item.op.name, len(tensors))
        spec_args = [_buffer(n, t, "input") for n, t in zip(names, tensors) if t is not None]
        if item.work.output is not None:
            spec_args.append(_buffer("out", item.work.output, "output"))
        path = folder / "handoff" / f"hotspot{spot.rank}_reference.py"
        write_bytes_atomic(path, stub.encode())
        out.append(Handoff(
            rank=spot.rank, label=spot.label, op=item.op.name, kernel=spot.kernels[0] if spot.kernels else "",
            input_dims=[list(t.dims) if t is not None else None for t in tensors], input_types=[str(t) for t in item.op.types or []],
            spec_args=spec_args, metric={"bytes": item.work.bytes_moved, "flops": item.work.flops},
            reference_stub=stub, stub_file=workspace.relative(path),
        ))
    return out
