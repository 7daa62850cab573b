"""Toolchain discovery: one place that finds each external tool and reads its version.

Search order (DESIGN.md): `HYPERLOOM_LLVM_DIR`, then `$ROCM_PATH/llvm/bin` (default
/opt/rocm/llvm/bin), then versioned names on PATH (`llvm-mc-22` … `llvm-mc-19`), then plain
names. ROCm and CUDA tools look in their install's bin folder before PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from hyperloom.core.errors import HyperloomError

LLVM_DIR_ENV = "HYPERLOOM_LLVM_DIR"
LLVM_VERSIONS = tuple(range(22, 18, -1))  # newest first: 22, 21, 20, 19
VERSION_TIMEOUT_S = 10.0


class Family(str, Enum):
    LLVM = "llvm"
    ROCM = "rocm"
    CUDA = "cuda"
    DRIVER = "driver"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    family: Family
    version_args: tuple[str, ...] = ("--version",)
    install_hint: str = ""


KNOWN_TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("llvm-mc", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("llvm-objdump", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("llvm-readelf", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("llvm-readobj", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("llc", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("llvm-cxxfilt", Family.LLVM, install_hint="apt-get install llvm-19"),
        ToolSpec("clang", Family.LLVM, install_hint="apt-get install clang-19"),
        ToolSpec("ld.lld", Family.LLVM, install_hint="apt-get install lld-19"),
        ToolSpec("hipcc", Family.ROCM, install_hint="install ROCm (hipcc) or use clang offline"),
        ToolSpec("hipconfig", Family.ROCM, install_hint="install ROCm (hip-runtime-amd provides hipconfig)"),
        ToolSpec("rocminfo", Family.ROCM, version_args=("--help",), install_hint="install ROCm (rocminfo)"),
        ToolSpec("amd-smi", Family.ROCM, version_args=("version",), install_hint="install ROCm (amd-smi)"),
        ToolSpec("rocm-smi", Family.ROCM, version_args=("--version",), install_hint="install ROCm (rocm-smi)"),
        ToolSpec("nvcc", Family.CUDA, install_hint="install the CUDA toolkit (nvcc)"),
        ToolSpec("cuobjdump", Family.CUDA, install_hint="install the CUDA toolkit (cuobjdump)"),
        ToolSpec("nvdisasm", Family.CUDA, install_hint="install the CUDA toolkit (nvdisasm)"),
        ToolSpec("nvidia-smi", Family.DRIVER, install_hint="install the NVIDIA driver (nvidia-smi)"),
        ToolSpec("cc", Family.DRIVER, install_hint="apt-get install gcc"),
        ToolSpec("c++filt", Family.DRIVER, install_hint="apt-get install binutils"),
        ToolSpec("c++", Family.DRIVER, install_hint="apt-get install g++"),
        ToolSpec("nm", Family.DRIVER, install_hint="apt-get install binutils"),
    )
}


class ToolInfo(BaseModel):
    """Where a tool was found and which version it reports."""

    name: str = Field(description="Generic tool name, e.g. 'llvm-mc'.")
    path: str | None = Field(description="Absolute path of the executable, or null when not found.")
    version: str | None = Field(default=None, description="Version number parsed from the tool's own output.")
    version_line: str | None = Field(default=None, description="The line of output the version came from.")
    found_by: str | None = Field(default=None, description="Which search rule found it.")
    install_hint: str = Field(default="", description="How to get the tool when it is missing.")


def _candidates(spec: ToolSpec) -> list[tuple[str, Path | str]]:
    """(rule, location) pairs in search order; a Path is a file to test, a str a name for PATH."""
    env = os.environ
    found: list[tuple[str, Path | str]] = []
    if spec.family is Family.LLVM:
        if env.get(LLVM_DIR_ENV):
            found.append((LLVM_DIR_ENV, Path(env[LLVM_DIR_ENV]) / spec.name))
        rocm = Path(env.get("ROCM_PATH", "/opt/rocm"))
        found.append(("ROCM_PATH/llvm/bin", rocm / "llvm" / "bin" / spec.name))
        found.extend((f"PATH ({spec.name}-{v})", f"{spec.name}-{v}") for v in LLVM_VERSIONS)
    elif spec.family is Family.ROCM:
        found.append(("ROCM_PATH/bin", Path(env.get("ROCM_PATH", "/opt/rocm")) / "bin" / spec.name))
    elif spec.family is Family.CUDA:
        for var in ("CUDA_HOME", "CUDA_PATH"):
            if env.get(var):
                found.append((f"{var}/bin", Path(env[var]) / "bin" / spec.name))
        found.append(("/usr/local/cuda/bin", Path("/usr/local/cuda/bin") / spec.name))
    found.append(("PATH", spec.name))
    return found


def _executable(location: Path | str) -> Path | None:
    if isinstance(location, Path):
        return location if location.is_file() and os.access(location, os.X_OK) else None
    on_path = shutil.which(location)
    return Path(on_path) if on_path else None


RACY_NS = 50_000_000
"""A folder changed this close before a search may change again within the same timestamp tick: such a search is
not reused (git's racy-clean rule)."""


@dataclass(frozen=True)
class _Search:
    """A finished search: its answer and the modification times of every folder it looked in, then."""

    info: ToolInfo
    stamps: tuple[int, ...]
    looked_at_ns: int
    file_mtime_ns: int | None


_searches: dict[tuple[object, ...], _Search] = {}


def _stamps(folders: list[str]) -> tuple[int, ...]:
    """Each folder's modification time (a file added, removed or renamed in it changes it); -1 when it is missing."""
    stamps = []
    for folder in folders:
        try:
            stamps.append(os.stat(folder or os.curdir).st_mtime_ns)
        except OSError:
            stamps.append(-1)
    return tuple(stamps)


def _working_folder() -> str:
    try:
        return os.getcwd()
    except OSError:  # removed under the process
        return ""


def _mtime_ns(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return -1


_VERSION_RE = re.compile(r"(\d+\.\d+(?:\.\d+)*)")


def parse_version(output: str) -> tuple[str | None, str | None]:
    """The version number and its line: prefer a line that says 'version' or 'release'."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    ranked = [line for line in lines if re.search(r"\b(version|release)\b", line, re.I)] + lines
    for line in ranked:
        if match := _VERSION_RE.search(line):
            return match.group(1), line
    return None, None


@lru_cache(maxsize=64)
def _probe_version(path: str, mtime_ns: int, args: tuple[str, ...], timeout_s: float) -> tuple[str | None, str | None]:
    del mtime_ns  # part of the cache key only: a replaced binary is probed again
    try:
        proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    return parse_version(proc.stdout + "\n" + proc.stderr)


def find_tool(name: str, *, version_timeout_s: float | None = VERSION_TIMEOUT_S) -> ToolInfo:
    """Find `name` by the search order; `path` is null when nothing matched. `version_timeout_s=None`
    locates the tool without running it (no version).

    A search is reused while no folder it looked in has changed (and the file it found is the same): a tune
    session asks for its compilers several times a candidate, and a search is a hundred stat calls (2 ms)."""
    spec = KNOWN_TOOLS.get(name) or ToolSpec(name, Family.DRIVER)
    candidates = _candidates(spec)
    path_folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
    folders = [str(location.parent) for _, location in candidates if isinstance(location, Path)] + path_folders
    here = _working_folder() if "" in path_folders else None  # an empty PATH entry is the working folder
    key = (name, version_timeout_s, tuple(str(location) for _, location in candidates), tuple(path_folders), here)
    stamps = _stamps(folders)
    if (done := _searches.get(key)) is not None and done.stamps == stamps and max(stamps, default=-1) < done.looked_at_ns - RACY_NS \
            and _mtime_ns(done.info.path) == done.file_mtime_ns:
        return done.info.model_copy()
    looked_at_ns = time.time_ns()
    info = _search(spec, candidates, version_timeout_s)
    _searches[key] = _Search(info, stamps, looked_at_ns, _mtime_ns(info.path))
    return info


def _search(spec: ToolSpec, candidates: list[tuple[str, Path | str]], version_timeout_s: float | None) -> ToolInfo:
    name = spec.name
    for rule, location in candidates:
        path = _executable(location)
        if path is None:
            continue
        version, line = (None, None) if version_timeout_s is None else _probe_version(str(path), path.stat().st_mtime_ns, spec.version_args,
                                                                                      version_timeout_s)
        return ToolInfo(
            name=name, path=str(path), version=version, version_line=line, found_by=rule, install_hint=spec.install_hint
        )
    return ToolInfo(name=name, path=None, install_hint=spec.install_hint)


def require_tool(name: str) -> ToolInfo:
    """Like find_tool, but a missing tool is an error that says how to get it."""
    info = find_tool(name)
    if info.path is None:
        hint = info.install_hint or f"install {name}"
        extra = (f", or set {LLVM_DIR_ENV} to a folder holding "
                 "it") if KNOWN_TOOLS.get(name, ToolSpec(name, Family.DRIVER)).family is Family.LLVM else ""
        raise HyperloomError(f"{name} was not found", f"{hint}{extra}")
    return info


def discover_all() -> list[ToolInfo]:
    """Every known tool, found or not, in a stable order."""
    return [find_tool(name) for name in KNOWN_TOOLS]
