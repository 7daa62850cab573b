"""Worker side of the ahead-of-time build: the kernel specialized exactly as Triton's own launcher would
(its binder and argument packing, on stand-ins of the spec's buffers and scalars), compiled for one
target with Triton's compiler, written as a cubin or hsaco, with what a launch needs to know."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

from hyperloom.tools.triton.dtypes import tl_dtype
from hyperloom.tools.triton.entry import EntryError, apply_heuristics, def_line, load_module, unwrap

_LLVM_PARAM = re.compile(r"%[\w.]+")
_OCCUPANCY = re.compile(r"^\s*; Occupancy: (\d+)", re.MULTILINE)


class Buffer:
    """What Triton's specialization reads from a tensor argument: its dtype, address alignment and extent.
    Device allocations are at least 256-byte aligned, so the address stands in as 0."""

    def __init__(self, dtype: Any, nbytes: int) -> None:
        self.dtype, self.nbytes = dtype, nbytes

    def data_ptr(self) -> int:
        return 0

    def ptr_range(self) -> int:
        return self.nbytes


def gpu_target(name: str) -> Any:
    from triton.backends.compiler import GPUTarget

    if name.startswith("sm_"):
        return GPUTarget("cuda", int(re.sub(r"\D", "", name)), 32)
    arch = name.split(":")[0]
    return GPUTarget("hip", arch, 64 if arch.startswith("gfx9") else 32)


def compile_payload(payload: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"  # ptxas -v's report (registers, spills) printed with the build
    try:
        return _compile(payload)
    except EntryError as exc:
        return exc.payload()


def _compile(payload: dict[str, Any]) -> dict[str, Any]:
    import triton
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    module = load_module(payload["source"])
    jit, chain = unwrap(module, payload["entry"])
    target = gpu_target(payload["target"])
    backend = make_backend(target)
    values: dict[str, Any] = {}
    for arg in payload["args"]:
        values[arg["name"]] = Buffer(tl_dtype(arg["dtype"]), arg["nbytes"]) if arg["kind"] == "buffer" else arg["value"]
    constexprs = dict(payload["constexprs"])
    if payload["heuristics"]:
        computed = apply_heuristics(chain, {**values, **constexprs})
        constexprs.update({name: computed[name] for name in payload["heuristics"]})
    kwargs = {**constexprs, **payload["options"], "debug": bool(getattr(jit, "debug", False))}
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    bound, specialization, options = binder(**values, **kwargs)
    options, signature, constants, attrs = _pack(jit, backend, kwargs, bound, specialization)
    _refuse_fp8_the_target_lacks(payload, options)
    if any("tensordesc" in str(kind) for kind in signature.values()):
        raise EntryError("unsupported", "the kernel takes tensor descriptors, which Hyperloom's runtime does not build")
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log):
            compiled = triton.compile(ASTSource(jit, signature, constants, attrs), target=target, options=options.__dict__)
    except Exception as exc:  # noqa: BLE001 - Triton's compile errors are the user's, reported with their line
        return {"error": _compile_error(exc, jit, payload["source"])}
    metadata = compiled.metadata
    kept = [[name, str(kind)] for name, kind in signature.items() if kind != "constexpr" and name in values]
    suffix = ".cubin" if target.backend == "cuda" else ".hsaco"
    image = compiled.asm["cubin" if suffix == ".cubin" else "hsaco"]
    Path(payload["out"] + suffix).write_bytes(image)
    hidden = _llvm_params(compiled.asm.get("llir", ""), metadata.name) - len(kept)
    return {
        "name": metadata.name, "suffix": suffix, "shared": int(metadata.shared), "num_warps": int(metadata.num_warps),
        "warp_size": int(getattr(metadata, "warp_size", target.warp_size)), "num_ctas": int(getattr(metadata, "num_ctas", 1)),
        "num_stages": int(getattr(metadata, "num_stages", 0)),
        "cooperative": bool(getattr(metadata, "launch_cooperative_grid", False)),
        "hidden": hidden, "global_scratch_size": int(getattr(metadata, "global_scratch_size", 0) or 0),
        "profile_scratch_size": int(getattr(metadata, "profile_scratch_size", 0) or 0),
        "kept": kept, "constexprs": {k: v for k, v in constexprs.items() if isinstance(v, int | float | str | bool)},
        "log": log.getvalue()[-8000:], "triton_version": triton.__version__, "occupancy": _occupancy(compiled.asm.get("amdgcn", "")),
    }


def _refuse_fp8_the_target_lacks(payload: dict[str, Any], options: Any) -> None:
    """An fp8 buffer in a format Triton does not compile for this target (the fnuz formats on NVIDIA, e4m3fn before sm_89) is
    one clear error naming the target and the dtype, not a compiler failure deep in a conversion."""
    supported = set(getattr(options, "supported_fp8_dtypes", ()) or ())
    for arg in payload["args"]:
        if arg["kind"] != "buffer" or not arg["dtype"].startswith("float8") or not supported:
            continue
        name = tl_dtype(arg["dtype"]).name
        if name not in supported:
            raise EntryError("unsupported", f"Triton for {payload['target']} cannot carry {arg['dtype']} (buffer {arg['name']}, "
                                            f"tl.{name}): it compiles fp8 as "
                             f"{', '.join(sorted(supported))} there; the fnuz formats are AMD's (gfx942), float8_e4m3fn needs "
                             "sm_89 or later")


def _pack(jit: Any, backend: Any, kwargs: dict[str, Any], bound: dict[str, Any], specialization: list[Any]) -> tuple[Any, ...]:
    """(options, signature, constexprs, attributes) as JITFunction.run computes them before compiling."""
    if hasattr(jit, "_pack_args"):  # Triton >= 3.5
        return jit._pack_args(backend, kwargs, bound, specialization, None)
    from triton._utils import find_paths_if, get_iterable_path  # Triton 3.4: the same steps, inline in run()

    options = backend.parse_options(kwargs)
    sigvals = [x[0] for x in specialization]
    signature = dict(zip((p.name for p in jit.params), sigvals, strict=True))
    constexprs = {path: get_iterable_path(list(bound.values()), path) for path in find_paths_if(sigvals, lambda _, v: v == "constexpr")}
    attrvals = [x[1] for x in specialization]
    attrs = {k: backend.parse_attr(get_iterable_path(attrvals, k)) for k in find_paths_if(attrvals, lambda _, x: isinstance(x, str))}
    return options, signature, constexprs, attrs


def _occupancy(amdgcn: str) -> int | None:
    """Waves a SIMD as the AMDGPU backend's own resource comment gives it ("; Occupancy: 8" in the kernel's assembly), or None."""
    found = _OCCUPANCY.search(amdgcn)
    return int(found[1]) if found else None


def _llvm_params(llir: str, name: str) -> int:
    """How many parameters the kernel's LLVM function takes: its arguments plus Triton's hidden scratch pointers."""
    for line in llir.splitlines():
        if line.startswith("define") and f"@{name}(" in line:
            inside = line.split(f"@{name}(", 1)[1]
            depth, end = 1, 0
            for end, char in enumerate(inside):
                depth += {"(": 1, ")": -1}.get(char, 0)
                if depth == 0:
                    break
            return len(_LLVM_PARAM.findall(inside[:end]))
    return -1


def _compile_error(exc: Exception, jit: Any, source: str) -> dict[str, Any]:
    """A compile failure with its file line (Triton numbers lines from the kernel's def)."""
    node = getattr(exc, "node", None)
    line = column = None
    if node is not None and getattr(node, "lineno", None) is not None:
        line, column = def_line(jit) + node.lineno - 1, getattr(node, "col_offset", 0) + 1
    message = getattr(exc, "error_message", None) or str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
    if isinstance(message, list):
        message = message[0]
    return {"kind": "compile", "message": f"{type(exc).__name__}: {message}"[:2000], "where": f"{Path(source).name}:{line}" if line else "",
            "line": line, "column": column, "detail": str(exc)[-3000:]}
