"""spec_init: a draft kernel.yaml and a reference stub from a kernel source and its entry's name.

The parameters come from the compiler (tools/kernelspec/signature.py): a pointer becomes a buffer (const
pointee: input; writable: output, or inout when the kernel reads it first), a value a scalar, with
the dtype its C type maps to; a template parameter becomes a define. What the source cannot say
(buffer dimensions, the launch, shapes, the tolerance, the reference's math) is written as a TODO
placeholder, which spec_check lists until it is filled. Existing files are never replaced unless
`overwrite` is set.
"""

from __future__ import annotations

import json
import os
import re

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.spec.models import KernelParameter, SpecCheckRequest, SpecInitRequest, SpecInitResult
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.kernelspec.signature import Parameter, Signature, dtype_of, read_signature

_LANGUAGE = {".cu": "cuda", ".hip": "hip", ".cpp": "hip", ".cc": "hip", ".cxx": "hip", ".c": "c"}
_SCALAR_DTYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")
_TARGETS = {"cuda": "[sm_90]  # sm_XX targets only (a .cu file); write the kernel as .hip to build it for AMD too",
            "hip": "[gfx1201, gfx942, sm_90]  # gfx (offline clang) and sm_XX (nvcc) targets",
            "c": "[host]"}


def run_spec_init(request: SpecInitRequest, workspace: Workspace, progress: ProgressFn | None = None) -> SpecInitResult:
    source = workspace.resolve(request.source, kind="file", what="source")
    language = _LANGUAGE.get(source.suffix.lower())
    if language is None:
        raise HyperloomError(f"cannot tell the language of {source.name}", "pass a .cu (CUDA), .hip/.cpp (HIP) or .c (host C) source")
    if not re.fullmatch(r"[A-Za-z_]\w*", request.entry):
        raise HyperloomError(f"entry {request.entry[:60]!r} is not a function name",
                             "pass the kernel's name without template arguments or parameters")
    out = workspace.resolve(request.out, must_exist=False, kind="dir", what="out") if request.out else \
        workspace.check(source.parent / request.entry, must_exist=False, kind="dir", what="out")
    spec_path, reference_path = out / "kernel.yaml", out / "reference.py"
    if not request.overwrite and (existing := [p for p in (spec_path, reference_path) if p.exists()]):
        raise HyperloomError(f"{', '.join(workspace.relative(p) for p in existing)} already exist(s)",
                             "pass another out folder, or overwrite=true to replace the draft")
    signature = read_signature(source, request.entry, language)
    type_parameters = {name for name, kind in signature.template if kind == "type"}
    parameters = [_describe(p, type_parameters) for p in signature.parameters]
    defines = {f"HL_{name.upper()}": kind for name, kind in signature.template}
    entry = request.entry + (f"<{', '.join(defines)}>" if defines else "")
    name = request.name or request.entry
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(spec_path, _draft(name, os.path.relpath(source, out), language, entry, defines, signature, parameters).encode())
    write_bytes_atomic(reference_path, _stub(request.entry, parameters).encode())
    if progress is not None:
        progress(1, 2)
    check = run_spec_check(SpecCheckRequest(spec=workspace.relative(spec_path), run_reference=False), workspace)
    todo = sum(1 for p in check.problems if p.severity == "todo")
    return SpecInitResult(
        summary=f"drafted {workspace.relative(spec_path)} from {signature.name} ({len(parameters)} parameters read by clang); {todo} "
                "placeholder(s) to fill, then spec_check",
        spec=workspace.relative(spec_path), reference=workspace.relative(reference_path), entry=entry, parameters=parameters,
        template_parameters=[name for name, _ in signature.template], check=check,
    )


def _describe(parameter: Parameter, type_parameters: set[str]) -> KernelParameter:
    dtype, lanes = dtype_of(parameter.element)
    if parameter.pointer and parameter.element in type_parameters:  # T* of a template: a buffer whose dtype the define for T decides
        return KernelParameter(name=parameter.name, type=parameter.type, kind="buffer", dtype=None,
                               role="input" if parameter.const else "output")
    if parameter.pointer:
        note = f" ({lanes} lanes a element)" if lanes > 1 else ""
        return KernelParameter(name=parameter.name, type=parameter.type + note, kind="buffer" if dtype else "unsupported", dtype=dtype,
                               role="input" if parameter.const else "output")
    if dtype in _SCALAR_DTYPES and lanes == 1:
        return KernelParameter(name=parameter.name, type=parameter.type, kind="scalar", dtype=dtype, role=None)
    return KernelParameter(name=parameter.name, type=parameter.type, kind="unsupported", dtype=dtype, role=None)


def _q(text: str) -> str:
    return json.dumps(text)  # a YAML double-quoted string


def _draft(name: str, source: str, language: str, entry: str, defines: dict[str, str], signature: Signature,
           parameters: list[KernelParameter]) -> str:
    lines = [
        f"# Drafted by spec_init from {os.path.basename(source)} ({signature.name}); the parameters were read from clang's AST.",
        "# Fill every TODO (spec_check lists them with their field paths), then spec_check, bench and tune.",
        "# Every field is documented in the skill's spec.md; `hyperloom spec example rmsnorm` shows a complete spec.",
        f"name: {name}",
        f"description: {_q('TODO: what the kernel computes, and why the tolerance below fits it')}",
        f"source: {source}",
        f"language: {language}",
        "variants:",
        "  gpu:" if language != "c" else "  host:",
        f"    entry: {_q(entry)}",
        f"    targets: {_TARGETS[language]}",
    ]
    if defines:
        lines.append("    defines:  # one per template parameter; a number, a type name, or {expr: <shape variable>} to tune it")
        lines += [f"      {define}: {_q(f'TODO: a value for the template parameter ({kind})')}" for define, kind in defines.items()]
    if language == "c":
        lines.append("    # launch_args: true  # to also receive the grid (x, y, z) and block (x, y, z) as six int32 arguments")
    lines.append("args:  # in the kernel's parameter order")
    for p in parameters:
        if p.kind == "buffer":
            role = p.role if p.role == "input" else "output"
            hint = "" if p.role == "input" else "  # writable: output, or inout if the kernel reads it first"
            dtype = p.dtype or _q(f"TODO: the dtype of {p.type.replace('*', '').strip()} (e.g. float32), as its define gives it")
            lines.append(f"  - {{kind: buffer, name: {p.name}, dtype: {dtype}, shape: "
                         f"[{_q(f'TODO: dimensions of {p.name} as expressions of the shape')}], role: {role}}}{hint}  # {p.type}")
        elif p.kind == "scalar":
            lines.append(f"  - {{kind: scalar, name: {p.name}, dtype: {p.dtype}, value: "
                         f"{_q(f'TODO: {p.name} as an expression of the shape')}}}  # {p.type}")
        else:
            lines.append(f"  - {{kind: scalar, name: {p.name}, dtype: int32, value: "
                         f"{_q(f'TODO: {p.type} has no supported dtype; pass it another way, or choose a dtype')}}}")
    lines += [
        "launch:",
        f"  grid: [{_q('TODO: blocks, e.g. rows or ceil_div(n, block)')}]",
        f"  block: [{_q('TODO: threads per block, e.g. block (a shape variable you can tune)')}]",
        "shapes:  # integers; every name an expression uses; the first small enough for the reference to run fast",
        f"  - {{TODO_shape: {1}}}  # e.g. {{rows: 8, cols: 1000, block: 256}}",
        "seed: 0",
        "adversarial: [zeros]  # also: ones, extremes, denormals",
        f"reference: reference.py:{signature.name}",
        f"tolerance: {{atol: {_q('TODO: absolute tolerance')}, rtol: {_q('TODO: relative tolerance')}}}  # declared before any trial; see "
        "the skill's tolerance table",
        f"metric: {{bytes: {_q('TODO: bytes read + written per launch, or delete the metric')}}}",
        "tuning: {}  # e.g. {block: [64, 128, 256, 512]} for a shape variable the launch uses",
        "",
    ]
    return "\n".join(lines)


def _stub(function: str, parameters: list[KernelParameter]) -> str:
    inputs = [p for p in parameters if p.kind == "buffer" and p.role == "input"]
    outputs = [p for p in parameters if p.kind == "buffer" and p.role != "input"]
    scalars = [p for p in parameters if p.kind == "scalar"]
    return "\n".join([
        f'"""Reference of {function}, drafted by spec_init: the contract every variant is gated against.',
        "",
        "Runs in a worker process. It receives the input buffers by name (numpy arrays of the declared dtypes and shapes)",
        "and the shape's variables by name; it returns every output and inout buffer by name. Compute in float64 where",
        "you can: the declared tolerance is the distance the kernel may be from this.",
        "",
        f"inputs: {', '.join(f'{p.name} ({p.dtype})' for p in inputs) or 'none'}",
        f"outputs to return: {', '.join(f'{p.name} ({p.dtype})' for p in outputs) or 'none'}",
        f"scalars (derive them from the shape): {', '.join(p.name for p in scalars) or 'none'}",
        '"""',
        "",
        "import numpy as np",
        "",
        "",
        f"def {function}(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:",
        *[f"    {p.name} = inputs[{p.name!r}].astype(np.float64)" for p in inputs],
        f'    raise NotImplementedError("TODO: compute {", ".join(p.name for p in outputs) or "the outputs"} and return them by name")',
        "",
    ])
