"""Command lines per toolchain: clang offline, hipcc, llvm-mc + ld.lld for assembly, nvcc for sm_XX."""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.toolchain import ToolInfo, find_tool, require_tool
from hyperloom.tools.compile.flags import check_defines, check_flags
from hyperloom.tools.compile.models import CompileRequest
from hyperloom.tools.isa.targets import require_known_amd_target

AMD_TARGET = re.compile(r"gfx([0-9]{2,4}[a-z]?|[0-9]{1,2}(-[0-9])?-generic)(:(sramecc|xnack)[+-])*")
NVIDIA_TARGET = re.compile(r"sm_[0-9]{2,3}[af]?")
_SUFFIX_LANGUAGE = {".hip": "hip", ".cpp": "hip", ".cc": "hip", ".cxx": "hip", ".s": "asm", ".asm": "asm", ".cu": "cuda", ".c": "c",
                    ".py": "triton"}
HOST_TARGET = "host"


@dataclass(frozen=True)
class Step:
    tool: ToolInfo
    args: list[str]  # "{out}" and "{obj}" stand for paths chosen at run time


@dataclass(frozen=True)
class Plan:
    """How one target is built: the steps, the code-object suffix, and what feeds the cache key."""

    target: str
    compiler: ToolInfo
    steps: list[Step]
    suffix: str
    depfile: bool
    key_material: dict = field(default_factory=dict)


def prelude_dir(kind: str) -> Path:
    """Hyperloom's shipped HIP headers: 'amd' (offline clang) or 'cuda' (HIP source through nvcc)."""
    return Path(str(resources.files("hyperloom.tools.compile") / "prelude" / kind))


def language_of(request: CompileRequest, source: Path) -> str:
    if request.language != "auto":
        return request.language
    try:
        return _SUFFIX_LANGUAGE[source.suffix.lower()]
    except KeyError:
        raise HyperloomError(
            f"cannot tell the language of {source.name} from its suffix",
            "name it .hip, .cpp, .s or .cu, or pass language",
        ) from None


def _common(request: CompileRequest, includes: list[Path]) -> list[str]:
    return [f"-{request.opt_level}", *check_defines(request.defines), *(f"-I{p}" for p in includes)]


def plan_target(request: CompileRequest, source: Path, target: str, includes: list[Path]) -> Plan:
    language = language_of(request, source)
    if target == HOST_TARGET or language in ("c", "cpp"):
        return _host_plan(request, source, target, language, includes)
    if NVIDIA_TARGET.fullmatch(target):
        return _nvcc_plan(request, source, target, language, includes)
    if not AMD_TARGET.fullmatch(target):
        raise HyperloomError(
            f"{target!r} is not a target name",
            "use a gfx name such as gfx1201, gfx1100, gfx942 or gfx90a, an NVIDIA sm_XX such as sm_90, or host (C on the CPU)",
        )
    if language == "cuda":
        raise HyperloomError(f"CUDA source {source.name} cannot build for {target}",
                             "write the kernel as HIP (.hip) to build it for AMD and NVIDIA")
    if language in ("hip", "asm"):  # built by this toolchain's LLVM; Triton brings its own
        require_known_amd_target(target)
    if request.wavefront_size == 32 and target.startswith("gfx9"):
        raise HyperloomError(f"{target} runs wave64 only", "drop wavefront_size or set it to 64")
    wave = ["-mwavefrontsize64"] if request.wavefront_size == 64 and not target.startswith("gfx9") else []
    if language == "asm":
        return _asm_plan(request, source, target, wave)
    if language == "triton":
        return _triton_plan(request, source, target)
    return _hip_plan(request, source, target, includes, wave)


def _hip_plan(request: CompileRequest, source: Path, target: str, includes: list[Path], wave: list[str]) -> Plan:
    use_hipcc = request.compiler == "hipcc" or (request.compiler == "auto" and find_tool("hipcc").path is not None)
    if request.compiler == "nvcc":
        raise HyperloomError(f"nvcc cannot build for {target}", "use compiler clang or hipcc for gfx targets")
    flags = check_flags(request.extra_flags, "clang")
    remarks = ["-Rpass-analysis=kernel-resource-usage", "-fno-caret-diagnostics", "-fno-color-diagnostics"]
    if use_hipcc:
        hipcc = require_tool("hipcc")
        args = ["--genco", f"--offload-arch={target}", *wave, *_common(request, includes), *remarks, *flags,
                "-MD", "-MF", "{dep}", str(source), "-o", "{out}"]
        return Plan(target, hipcc, [Step(hipcc, args)], ".hsaco", True)
    clang = require_tool("clang")
    args = [
        "-x", "hip", f"--offload-arch={target}", "--cuda-device-only", "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc",
        *wave, *_common(request, [*includes, prelude_dir("amd")]), *remarks, *flags,
        "-MD", "-MF", "{dep}", str(source), "-o", "{out}",
    ]
    return Plan(target, clang, [Step(clang, args)], ".hsaco", True)


def _asm_plan(request: CompileRequest, source: Path, target: str, wave: list[str]) -> Plan:
    if request.compiler not in ("auto", "clang"):
        raise HyperloomError(f"assembly is built with llvm-mc and ld.lld, not {request.compiler}", "set compiler to auto")
    if request.extra_flags or request.defines:
        raise HyperloomError("assembly builds take no extra_flags or defines", "remove them, or write the kernel in HIP")
    llvm_mc, lld = require_tool("llvm-mc"), require_tool("ld.lld")
    attrs = ["-mattr=+wavefrontsize64"] if wave else []
    assemble = Step(llvm_mc, ["-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", *attrs, "-filetype=obj", str(source), "-o", "{obj}"])
    link = Step(lld, ["-shared", "{obj}", "-o", "{out}"])
    return Plan(target, llvm_mc, [assemble, link], ".hsaco", False, {"linker": lld.version})


def _nvcc_plan(request: CompileRequest, source: Path, target: str, language: str, includes: list[Path]) -> Plan:
    if language == "asm":
        raise HyperloomError(f"AMDGPU assembly cannot build for {target}", "use a gfx target")
    if request.compiler not in ("auto", "nvcc"):
        raise HyperloomError(f"{request.compiler} cannot build for {target}", "use compiler nvcc (or auto) for sm_XX targets")
    nvcc = require_tool("nvcc")
    flags = check_flags(request.extra_flags, "nvcc")
    hip_compat = [prelude_dir("cuda")] if language == "hip" else []
    args = [
        "-cubin", f"-arch={target}", "-x", "cu", *_common(request, [*includes, *hip_compat]), "-Xptxas=-v", *flags,
        "-MD", "-MF", "{dep}", str(source), "-o", "{out}",
    ]
    return Plan(target, nvcc, [Step(nvcc, args)], ".cubin", True)


def _host_plan(request: CompileRequest, source: Path, target: str, language: str, includes: list[Path]) -> Plan:
    """C (or C++, language cpp) for the host CPU (the `c` runtime backend): a shared library from the system compiler."""
    if target != HOST_TARGET or language not in ("c", "cpp"):
        raise HyperloomError(f"{source.name} ({language}) cannot build for {target}",
                             "build C or C++ (language cpp) sources for target host, and host only from them")
    cc = require_tool("cc" if language == "c" else "c++")
    flags = check_flags(request.extra_flags, "clang")
    standard = ["-std=c11"] if language == "c" else ["-x", "c++", "-std=c++17"]
    args = [f"-{request.opt_level}", "-shared", "-fPIC", *standard, *check_defines(request.defines),
            *(f"-I{p}" for p in includes), *flags, "-MD", "-MF", "{dep}", str(source), "-o", "{out}"]
    return Plan(target, cc, [Step(cc, args)], ".so", True)


def _triton_plan(request: CompileRequest, source: Path, target: str) -> Plan:
    """A Triton kernel file → hsaco, compiled by Triton's own LLVM in a worker process."""
    try:
        version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        raise HyperloomError("Triton kernels need the triton package", "pip install 'hyperloom[triton]' (or triton>=3.4)") from None
    if not request.kernels or len(request.kernels) != 1:
        raise HyperloomError("a Triton build needs the jit function's name", "pass kernels=[<function name>]")
    if request.extra_flags or request.include_dirs:
        raise HyperloomError("Triton builds take no extra_flags or include_dirs", "remove them; pass constexpr values as defines")
    signature, constexprs = {}, {}
    for item in request.triton_signature:
        name, _, kind = item.partition(":")
        if not name.isidentifier() or not kind:
            raise HyperloomError(f"triton_signature entry {item!r} is not NAME:TYPE", "write e.g. x_ptr:*fp32, n:i32, BLOCK:constexpr")
        signature[name] = kind
    for define in request.defines:
        name, _, value = define.partition("=")
        constexprs[name] = int(value) if value.lstrip("-").isdigit() else value
    if not signature:
        raise HyperloomError("a Triton build needs triton_signature",
                             "list every argument as NAME:TYPE, constexprs as NAME:constexpr with their values in defines")
    wave = request.wavefront_size or (64 if target.startswith("gfx9") else 32)
    tool = ToolInfo(name="triton", path=sys.executable, version=version, found_by="python package")
    args = ["-m", "hyperloom.tools.compile.triton_worker", str(source), request.kernels[0], target, str(wave),
            json.dumps(signature, sort_keys=True), json.dumps(constexprs, sort_keys=True), "{out}"]
    return Plan(target, tool, [Step(tool, args)], ".hsaco", False)
