"""Request and result models of compile_kernel."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence
from hyperloom.core.toolchain import ToolInfo

Language = Literal["auto", "hip", "asm", "cuda", "c", "cpp", "triton"]
Compiler = Literal["auto", "clang", "hipcc", "nvcc"]


class CompileRequest(Request):

    source: str = Field(min_length=1, description="Source: .hip/.cpp, .s, .cu, .c or .py (Triton).")
    targets: list[str] = Field(min_length=1, max_length=16, description="gfx names, sm_XX or host.")
    language: Language = Field("auto", description="auto: by suffix.")
    compiler: Compiler = Field("auto", description="auto: hipcc, clang or nvcc.")
    kernels: list[str] | None = Field(None, max_length=64, description="Kernels it must contain.")
    defines: list[str] = Field(default_factory=list, max_length=64, description="NAME or NAME=VALUE.")
    opt_level: Literal["O0", "O1", "O2", "O3", "Os"] = Field("O3", description="Optimization level.")
    wavefront_size: Literal[32, 64] | None = Field(None, description="gfx10+ wave size (default 32).")
    include_dirs: list[str] = Field(default_factory=list, max_length=16, description="Include folders.")
    triton_signature: list[str] = Field(
        default_factory=list, max_length=64,
        description="Triton: NAME:TYPE args (x_ptr:*fp32).",
    )
    extra_flags: list[str] = Field(default_factory=list, max_length=32, description="Allowed flags.")
    output_dir: str = Field(".hyperloom/build", description="Folder for the code objects.")
    use_cache: bool = Field(True, description="Reuse an unchanged build.")


class Diagnostic(BaseModel):
    file: str
    line: int | None
    column: int | None
    severity: Literal["error", "warning", "note"]
    message: str


class KernelReport(BaseModel):
    """Resource usage of one kernel, as the compiler recorded it."""

    name: str
    vgprs: int | None = Field(description="VGPRs per lane (AMD) or registers per thread (NVIDIA).")
    agprs: int | None = None
    sgprs: int | None = None
    vgpr_spills: int | None = Field(description="Spilled VGPRs (AMD) or spill store bytes (NVIDIA).")
    sgpr_spills: int | None = None
    lds_bytes: int | None = Field(description="Static LDS / shared memory per workgroup, bytes.")
    scratch_bytes: int | None = Field(description="Scratch (private) or stack bytes per lane.")
    wavefront_size: int | None = None
    max_workgroup_size: int | None = None
    occupancy_waves_per_simd: int | None = Field(None, description="The compiler's occupancy estimate, waves per SIMD (AMD).")


class TargetBuild(BaseModel):
    target: str
    ok: bool
    summary: str = Field(description="One line: what was built, or why it failed.")
    code_object: str | None = Field(description="Path of the code object, relative to the workspace.")
    cache_hit: bool
    compiler: ToolInfo
    command: list[str] = Field(description="The compiler command line, for reproducing the build.")
    diagnostics: list[Diagnostic]
    kernels: list[KernelReport]
    log: str = Field(description="The compiler's messages (trimmed).")
    compile_s: float = Field(description="Seconds spent in the compiler (0 on a cache hit).")
    overhead_s: float = Field(description="Seconds spent by Hyperloom around the compiler.")


class CompileResult(BaseModel):
    ok: bool = Field(description="True when every target built.")
    summary: str
    builds: list[TargetBuild]
    evidence: Evidence
