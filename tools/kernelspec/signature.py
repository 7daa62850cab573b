"""A kernel's parameters as the compiler reads them: clang's JSON AST of the entry, not a regex.

HIP and CUDA sources are parsed as HIP against Hyperloom's shipped headers (so `__global__`,
`threadIdx`, `half`, `__hip_bfloat16` and the fp8 types mean what they mean; CUDA's `__nv_bfloat16` and
`__nv_fp8_*` from vendor_types/); C sources as C. Errors inside function bodies (a CUDA
intrinsic the headers lack) do not matter: only the declaration is read. An include that cannot be
found is replaced by an empty stand-in and the parse retried, so a kernel from a larger project
can be read without that project's headers.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.toolchain import require_tool
from hyperloom.tools.compile.drivers import prelude_dir

PARSE_TIMEOUT_S = 120.0
MAX_STAND_INS = 32
_MISSING = re.compile(r"fatal error: '([^']+)' file not found")
_SCALARS = {
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16", "_Float16": "float16",
    "int": "int32", "signed int": "int32", "int32_t": "int32", "unsigned int": "uint32", "unsigned": "uint32", "uint32_t": "uint32",
    "long long": "int64", "long": "int64", "int64_t": "int64", "long long int": "int64", "long int": "int64",
    "unsigned long long": "uint64", "unsigned long": "uint64", "uint64_t": "uint64", "size_t": "uint64",
    "short": "int16", "int16_t": "int16", "unsigned short": "uint16", "uint16_t": "uint16",
    "char": "int8", "signed char": "int8", "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
    # bfloat16 and fp8 as ROCm, CUDA and clang spell them (ml_dtypes' names in the spec)
    "__hip_bfloat16": "bfloat16", "hip_bfloat16": "bfloat16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__bf16": "bfloat16",
    "__hip_fp8_e4m3_fnuz": "float8_e4m3fnuz", "__hip_fp8_e5m2_fnuz": "float8_e5m2fnuz", "__hip_fp8_e4m3": "float8_e4m3fn",
    "__hip_fp8_e5m2": "float8_e5m2", "__nv_fp8_e4m3": "float8_e4m3fn", "__nv_fp8_e5m2": "float8_e5m2",
}
_VECTORS = {"float2": ("float32", 2), "float4": ("float32", 4), "int2": ("int32", 2), "int4": ("int32", 4), "uint2": ("uint32", 2),
            "uint4": ("uint32", 4), "half2": ("float16", 2), "__hip_bfloat162": ("bfloat16", 2), "__nv_bfloat162": ("bfloat16", 2),
            "nv_bfloat162": ("bfloat16", 2), "__nv_fp8x2_e4m3": ("float8_e4m3fn", 2), "__nv_fp8x2_e5m2": ("float8_e5m2", 2),
            "__nv_fp8x4_e4m3": ("float8_e4m3fn", 4), "__nv_fp8x4_e5m2": ("float8_e5m2", 4)}
VENDOR_TYPES = Path(__file__).parent / "vendor_types"  # cuda_bf16.h and cuda_fp8.h with CUDA's type names, for the parse only
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # as clang prints it
    pointer: bool
    const: bool  # the pointee (for pointers) is const
    element: str  # the base type, qualifiers removed


@dataclass(frozen=True)
class Signature:
    name: str
    parameters: list[Parameter]
    template: list[tuple[str, str]]  # (name, "type" or the non-type parameter's type)


def read_signature(source: Path, entry: str, language: str) -> Signature:
    """The parameters (and template parameters) of function `entry` in `source`, from clang's AST."""
    clang = require_tool("clang")
    mode = ["-x", "c", "-std=c11"] if language == "c" else ["-x", "c++", "-std=c++17"] if language == "cpp" else [
        "-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc", "--offload-arch=gfx1201", f"-I{prelude_dir('amd')}",
        f"-I{VENDOR_TYPES}", "-include", "hip/hip_runtime.h", "-D__CUDACC__"]
    with tempfile.TemporaryDirectory(prefix="hyperloom-ast-") as stand_ins:
        for _ in range(MAX_STAND_INS):
            argv = [str(clang.path), *mode, f"-I{source.parent}", f"-I{stand_ins}", "-fsyntax-only", "-ferror-limit=0", "-w",
                    "-Xclang", "-ast-dump=json", "-Xclang", f"-ast-dump-filter={entry}", str(source)]
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=PARSE_TIMEOUT_S, errors="replace", check=False)
            except subprocess.TimeoutExpired as exc:
                raise HyperloomError(f"clang did not parse {source.name} within {PARSE_TIMEOUT_S:g} s",
                                     "pass a smaller source holding the kernel") from exc
            missing = _MISSING.search(proc.stderr)
            if missing is None:
                break
            stand_in = Path(stand_ins) / missing.group(1)
            if stand_in.exists() or ".." in Path(missing.group(1)).parts:
                break
            stand_in.parent.mkdir(parents=True, exist_ok=True)
            stand_in.write_text("/* stand-in: the real header was not found; only declarations are read */\n")
    found = [d for d in _decls(proc.stdout) if d.get("name") == entry and d.get("kind") in ("FunctionDecl", "FunctionTemplateDecl")]
    with_params = [d for d in found if _function(d) is not None and _params(_function(d))] or found
    if not with_params:
        errors = [line for line in proc.stderr.splitlines() if "error" in line][:3]
        raise HyperloomError(
            f"{source.name} declares no function {entry!r}" + (f" (clang: {' | '.join(errors)[:300]})" if errors else ""),
            "pass the kernel's name as the source spells it (a template's name without <...>)",
        )
    decl = with_params[0]
    function = _function(decl)
    template = [(p.get("name", f"T{i}"), "type" if p["kind"] == "TemplateTypeParmDecl" else p.get("type", {}).get("qualType", "int"))
                for i, p in enumerate(decl.get("inner", [])) if p.get("kind") in ("TemplateTypeParmDecl", "NonTypeTemplateParmDecl")]
    return Signature(entry, [_parameter(p, i) for i, p in enumerate(_params(function))], template)


def _decls(text: str) -> list[dict[str, Any]]:
    """The JSON objects clang printed one after another (one per declaration the filter matched)."""
    decoder, found, index = json.JSONDecoder(), [], 0
    while (start := text.find("{", index)) != -1:
        try:
            value, index = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            break
        if isinstance(value, dict):
            found.append(value)
    return found


def _function(decl: dict[str, Any]) -> dict[str, Any] | None:
    if decl.get("kind") == "FunctionDecl":
        return decl
    return next((d for d in decl.get("inner", []) if d.get("kind") == "FunctionDecl"), None)


def _params(function: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [d for d in (function or {}).get("inner", []) if d.get("kind") == "ParmVarDecl"]


def _parameter(decl: dict[str, Any], index: int) -> Parameter:
    written = decl.get("type", {}).get("qualType", "int")
    pointer = "*" in written
    pointee = written.rsplit("*", 1)[0] if pointer else written
    element = " ".join(_QUALIFIERS.sub(" ", pointee).split())
    const = bool(re.search(r"\bconst\b", pointee)) if pointer else False
    return Parameter(decl.get("name") or f"arg{index}", written, pointer, const, element)


def dtype_of(element: str) -> tuple[str | None, int]:
    """(numpy dtype name, lanes) of a C type; (None, 1) when no supported dtype matches."""
    if element in _VECTORS:
        return _VECTORS[element]
    return _SCALARS.get(element), 1
