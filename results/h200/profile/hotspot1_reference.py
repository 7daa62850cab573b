"""Reference for aten::mm [1, 2048] bfloat16, [2048, 512] bfloat16,
written by hyperloom profile from .hyperloom/profile/llama/trace.json, in the kernel spec's contract. The torch op itself is the
reference: a replacement kernel must match what it returns at these shapes and dtypes. numpy has no bfloat16, so
a bfloat16 buffer is its bits as uint16 (as the spec declares it); other inputs are cast to the recorded dtype.
The output comes back in the op's dtype (bfloat16 as uint16 bits)."""

import numpy as np
import torch

SHAPES = {'a': [1, 2048], 'b': [2048, 512]}
DTYPES = {'a': torch.bfloat16, 'b': torch.bfloat16}


def call(packet, values: list) -> object:
    """The op with its recorded arguments in order; those its schema makes keyword-only go by name."""
    overloads = [getattr(packet, name) for name in sorted(packet.overloads(), key=lambda n: n != 'default')]
    schema = next(o._schema for o in overloads if len(o._schema.arguments) >= len(values))
    args = [v for a, v in zip(schema.arguments, values) if not a.kwarg_only]
    kwargs = {a.name: v for a, v in zip(schema.arguments, values) if a.kwarg_only}
    return packet(*args, **kwargs)


def tensor(name: str, array: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(array))
    if DTYPES[name] == torch.bfloat16 and array.dtype == np.uint16:
        t = t.view(torch.bfloat16)  # bfloat16 bits
    return t.to(DTYPES[name]).reshape(SHAPES[name])


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    args = {name: tensor(name, inputs[name]) for name in SHAPES}
    out = call(torch.ops.aten.mm, [args['a'], args['b']])
    out = (out[0] if isinstance(out, (tuple, list)) else out).contiguous()
    return {"out": (out.view(torch.uint16) if out.dtype == torch.bfloat16 else out).numpy()}
