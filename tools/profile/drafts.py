"""The kernel.yaml of a hand-off draft, as data: a hotspot's op or an unmatched chain (its source and entry still TODO), or
a chain the fusion library matched (the library's spec at the recorded shapes and dtypes, nothing left to fill in).

Every field is one kernel.yaml knows (tools/kernelspec/models.py); the buffers carry the recorded dtypes (bfloat16 and
fp8 are spec dtypes), the metric is the recorded work, the tolerance the one tolerance.py suggests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from hyperloom.core.dtypes import numpy_dtype
from hyperloom.core.shipped import shipped_kernels
from hyperloom.tools.profile.models import LibraryMatch
from hyperloom.tools.profile.replay import TORCH_NAMES
from hyperloom.tools.profile.tensors import Tensor
from hyperloom.tools.profile.tolerance import Suggested

SPEC_DTYPES = {**TORCH_NAMES, "bool": "uint8"}  # a torch dtype as kernel.yaml spells it (numpy's names; bool travels as bytes)
TODO_SOURCE = "TODO: the kernel's file beside this spec (Triton .py; or .cu/.hip/.c, language changed)"
TODO_ENTRY = "TODO: the kernel's name (its parameters: args, in order)"
GRID_NOTES = {"gemm": "grid: one program per output row, a draft; a GEMM tiles it, e.g. [ceil_div(rows, BLOCK_M) * "
                      "ceil_div(cols, BLOCK_N)]"}
GRID_NOTE = "grid: one program per output row (rows x cols is the output), a draft to change with the kernel"


@dataclass
class Draft:
    """A draft folder's contents before it is written: kernel.yaml (data and its header comment) and the reference."""

    name: str
    spec: dict[str, Any]
    header: list[str]
    reference: str
    todos: list[str]
    notes: list[str] = field(default_factory=list)
    copy: list[tuple[str, ...]] = field(default_factory=list)  # shipped files copied beside the spec (the library source)

    def kernel_yaml(self) -> str:
        comment = "".join(f"# {line}\n" for line in self.header)
        return comment + yaml.safe_dump(self.spec, sort_keys=False, default_flow_style=None, width=180, allow_unicode=True)


def spec_dtype(t: Tensor) -> str | None:
    return SPEC_DTYPES.get(t.dtype)


def buffer(name: str, t: Tensor, role: str, shape: list[Any] | None = None) -> dict[str, Any]:
    return {"kind": "buffer", "name": name, "dtype": spec_dtype(t), "shape": shape if shape is not None else list(t.dims), "role": role}


def rows_cols(t: Tensor) -> dict[str, int]:
    """An output's dimensions as the draft's shape variables: rows (all but the last, multiplied) and cols (the last)."""
    dims = t.dims or (1,)
    return {"rows": math.prod(dims[:-1]), "cols": dims[-1]}


def tolerance_fields(suggested: Suggested) -> dict[str, Any]:
    t = suggested.tolerance
    return {"atol": t.atol, "rtol": t.rtol, **({"max_ulp": t.max_ulp} if t.max_ulp is not None else {})}


def open_spec(name: str, description: str, args: list[dict[str, Any]], shape: dict[str, int], suggested: Suggested,
              metric: dict[str, int], floats: bool, kind: str) -> dict[str, Any]:
    """A spec whose kernel is still to write: its source and entry TODO, Triton by default, a row per program."""
    return {
        "name": name, "description": description, "source": TODO_SOURCE, "language": "triton",
        "variants": {"triton": {"entry": TODO_ENTRY, "note": GRID_NOTES.get(kind, GRID_NOTE)}},
        "args": args, "launch": {"grid": ["rows"]}, "shapes": [shape], "seed": 0,
        "adversarial": ["zeros", "ones"] if floats else [], "reference": "reference.py:reference",
        "tolerance": tolerance_fields(suggested), "metric": metric,
    }


def _product(shape: list[Any]) -> str:
    return " * ".join(str(d) if isinstance(d, int) or str(d).isidentifier() else f"({d})" for d in shape)


def library_spec(name: str, match: LibraryMatch, shapes: list[dict[str, int]], dtypes: dict[str, str], suggested: Suggested,
                 label: str) -> tuple[dict[str, Any], list[str]]:
    """The library kernel's own spec (variants, launch, scalars, tuning space) with its buffers in the recorded dtypes, at the
    recorded shapes, the metric counted in those dtypes; and the notes of what changed."""
    library = yaml.safe_load(shipped_kernels("triton", match.kernel, "kernel.yaml").read_text())
    changed: dict[str, list[str]] = {}
    args = []
    for arg in library["args"]:
        arg = dict(arg)
        if arg["kind"] == "buffer" and arg["name"] in dtypes and dtypes[arg["name"]] != arg["dtype"]:
            changed.setdefault(f"{dtypes[arg['name']]} as recorded (the library spec gates {arg['dtype']}; the kernel is the same)",
                               []).append(arg["name"])
            arg["dtype"] = dtypes[arg["name"]]
        if arg["kind"] == "scalar" and arg["name"] == "eps":
            eps = next((a.value for a in match.args if a.name == "eps"), None)
            arg["value"] = eps if eps is not None else arg["value"]
        args.append(arg)
    bytes_terms = []
    for arg in args:
        if arg["kind"] == "buffer" and arg["role"] != "scratch":
            size = numpy_dtype(arg["dtype"]).itemsize
            bytes_terms.append(f"{size * (2 if arg['role'] == 'inout' else 1)} * {_product(arg['shape'])}")
    spec = {key: library[key] for key in ("name", "description", "source", "language", "variants", "args", "launch", "shapes", "seed",
                                           "adversarial", "reference", "tolerance", "metric", "tuning") if key in library}
    spec.update(name=name, description=f"{library.get('description', '')} Drafted by hyperloom profile at the recorded shapes and "
                                       f"dtypes of {label}.",
                args=args, shapes=shapes, reference="reference.py:reference", tolerance=tolerance_fields(suggested),
                metric={"bytes": " + ".join(bytes_terms),
                        **({"flops": library["metric"]["flops"]} if library.get("metric", {}).get("flops") else {})})
    return spec, [f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} {what}" for what, names in changed.items()]
