"""Which llvm-mc the census uses, which AMDGPU targets it knows, and each target's generation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file
from hyperloom.core.process import run_checked
from hyperloom.core.toolchain import LLVM_DIR_ENV, find_tool, require_tool

TRIPLE = "amdgcn-amd-amdhsa"
DEFAULT_TARGETS = ("gfx1201", "gfx1200", "gfx1151", "gfx1100", "gfx1030", "gfx942", "gfx90a", "gfx908")
NEWER_TARGETS = ("gfx950", "gfx1250")  # included when the LLVM found knows them (LLVM 22)
# Targets whose layouts were checked bit by bit (layouts.py); other targets of the same
# generation use them unverified, which the census says in its checks.
VERIFIED_TARGETS = frozenset(DEFAULT_TARGETS)
TIMEOUT_S = 30.0
INSTALL = f"install Debian's llvm-19 (apt-get install llvm-19), or set {LLVM_DIR_ENV} to an LLVM bin folder built with AMDGPU"
_CPU_LINE = re.compile(r"^\s+(\S+)\s+- Select the \S+ processor\.?\s*$")
_GENERATION = re.compile(r"^gfx(9|10|11|12)(?:[0-9a-f]{1,2}|-[0-9]+(?:-[0-9]+)?-generic|-generic)$")


@dataclass(frozen=True)
class LlvmMc:
    """The llvm-mc binary a census runs, identified by content."""

    path: str
    version: str
    version_line: str
    sha256: str
    found_by: str

    @property
    def toolchain(self) -> dict[str, str]:
        """How evidence names this llvm-mc."""
        return {"llvm-mc": f"{self.version} (sha256 {self.sha256[:16]}…)"}


def find_llvm_mc() -> LlvmMc:
    """llvm-mc by the toolchain search order. Whether it has the amdgcn target is checked with
    the target (check_target, require_known), so a cached census costs no llvm-mc run for it."""
    info = require_tool("llvm-mc")
    assert info.path is not None
    real = Path(info.path).resolve()
    stat = real.stat()
    return LlvmMc(
        path=info.path,
        version=info.version or "unknown",
        version_line=info.version_line or "",
        sha256=_sha256_cached(str(real), stat.st_size, stat.st_mtime_ns),
        found_by=info.found_by or "",
    )


@lru_cache(maxsize=8)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    del size, mtime_ns  # cache key only: a replaced binary is hashed again
    return sha256_file(Path(path))


def parse_cpu_help(text: str) -> list[str]:
    """The gfx processor names in `llvm-mc -mcpu=help` output, in LLVM's order."""
    names = [m.group(1) for line in text.splitlines() if (m := _CPU_LINE.match(line))]
    return [name for name in names if name.startswith("gfx")]


@lru_cache(maxsize=8)
def known_targets(llvm_mc: str) -> tuple[str, ...]:
    """The gfx targets this llvm-mc knows (`-mcpu=help`, printed on stderr)."""
    proc = run_checked(
        [llvm_mc, f"-triple={TRIPLE}", "-mcpu=help", "-o", "/dev/null", "-"],
        timeout_s=TIMEOUT_S,
        what="listing llvm-mc's AMDGPU targets",
        input_text="",
        ok_codes=None,
    )
    if "unable to get target" in proc.stderr or "No available targets" in proc.stderr:
        raise HyperloomError(f"{llvm_mc} was built without the AMDGPU (amdgcn) target", INSTALL)
    targets = parse_cpu_help(proc.stdout + proc.stderr)
    if not targets:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:]) or "no output"
        raise HyperloomError(f"{llvm_mc} listed no gfx targets for {TRIPLE} ({tail})", INSTALL)
    return tuple(targets)


def generation(target: str) -> str | None:
    """'gfx9', 'gfx10', 'gfx11' or 'gfx12' for targets the census has layouts for, else None."""
    match = _GENERATION.match(target)
    return f"gfx{match.group(1)}" if match else None


def require_known(target: str, llvm: LlvmMc) -> None:
    """An error listing the targets this LLVM knows, unless it knows `target`."""
    _require_listed(target, llvm.path, llvm.version)


def require_known_amd_target(target: str) -> None:
    """The check every tool that takes a gfx target makes (census, probe, audit, compile_kernel): the same error,
    listing the targets this LLVM's llvm-mc knows. Target features (gfx90a:xnack+) are not part of the name.
    Without llvm-mc there is no list to check against; the compiler then says what it thinks."""
    info = find_tool("llvm-mc")
    if info.path is not None:
        _require_listed(target.split(":", 1)[0], info.path, info.version or "unknown")


def _require_listed(target: str, llvm_mc: str, version: str) -> None:
    known = known_targets(llvm_mc)
    if target not in known:
        raise HyperloomError(
            f"llvm-mc {version} does not know the target {target!r}; it knows {', '.join(known)}",
            "pass one of those targets (a newer LLVM knows more: gfx950 and gfx1250 need LLVM 22)",
        )


def check_target(target: str, llvm: LlvmMc) -> str:
    """The target's generation; an unknown or unsupported target is an error naming the options."""
    require_known(target, llvm)
    known = known_targets(llvm.path)
    gen = generation(target)
    if gen is None:
        supported = [t for t in known if generation(t)]
        raise HyperloomError(
            f"the census has encoding layouts for gfx9 to gfx12 only; {target} is older",
            f"pass one of {', '.join(supported)}",
        )
    return gen


def default_targets(llvm: LlvmMc) -> list[str]:
    """The targets `census --write-results` covers: the defaults, plus newer ones this LLVM knows."""
    known = set(known_targets(llvm.path))
    return [t for t in DEFAULT_TARGETS + NEWER_TARGETS if t in known]
