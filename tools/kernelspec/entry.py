"""A spec's entry as the runtime needs it: the symbol to load from the code object.

Users write the kernel's name as their source spells it. `extern "C"` kernels are found by that
name; C++ kernels (most of them) through their mangled symbol, matched by demangling; a template
instance (`rms_norm_f32<BLOCK>`) is instantiated by a two-line source that includes the kernel's
own file and takes the instance's address, its arguments filled by the preprocessor from the defines, so a kernel templated on its
block size is tuned as written, without source changes.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.toolchain import find_tool

DEMANGLE_TIMEOUT_S = 30.0
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SUFFIX = {"cuda": ".cu", "hip": ".hip", "cpp": ".cpp"}


def is_template(entry: str) -> bool:
    return "<" in entry


def check_entry(entry: str, language: str) -> None:
    """A plain identifier (C, asm, any kernel), or a template instance `name<args>` of a HIP or CUDA kernel."""
    base, _, rest = entry.partition("<")
    if not _IDENTIFIER.fullmatch(base.strip().split("::")[-1]) or (rest and not rest.rstrip().endswith(">")):
        raise HyperloomError(f"entry {entry[:80]!r} is not a kernel name",
                             "write the kernel's name, or a template instance such as rms_norm_f32<BLOCK>")
    if rest and language not in _SUFFIX:
        raise HyperloomError(f"entry {entry[:80]!r} is a template instance, which only HIP, CUDA and C++ (cpp) functions have",
                             "name the function itself")
    if rest and any(c in entry for c in ";{}#\"'\\\n"):
        raise HyperloomError(f"entry {entry[:80]!r} holds characters no template argument list has",
                             "write e.g. rms_norm_f32<BLOCK> (defines or numbers as arguments)")


def instance_source(source: Path, entry: str, language: str, folder: Path) -> Path:
    """A source that includes `source` and instantiates the template `entry` (its define names are filled by -D)."""
    check_entry(entry, language)
    # Taking the instance's address instantiates it (and, for kernels, its device code) without an explicit
    # instantiation, which would clash with one the source may already have.
    used = "__attribute__((used)) " if language == "cpp" else ""
    text = f'#include "{source}"\n{used}static void* const hyperloom_instance = (void*)&{entry};\n'
    path = folder / f"{source.stem}.{re.sub(r'[^A-Za-z0-9_]+', '_', entry).strip('_')}{_SUFFIX[language]}"
    if not path.is_file() or path.read_text() != text:
        write_bytes_atomic(path, text.encode())
    return path


def expected_name(entry: str, defines: Mapping[str, str | int]) -> str:
    """The entry with its template's define names replaced by their values: what the demangler prints."""
    base, sep, rest = entry.partition("<")
    if not sep:
        return entry.strip()
    filled = _IDENTIFIER.sub(lambda m: str(defines.get(m.group(0), m.group(0))), rest)
    return _compact(base + "<" + filled)


def resolve_symbol(entry: str, defines: Mapping[str, str | int], symbols: Sequence[str]) -> str:
    """The code object's symbol for `entry`: itself when present (extern "C"), else the one whose demangled name matches."""
    if entry in symbols or (not symbols and not is_template(entry)):
        return entry  # extern "C", or a code object whose kernel list could not be read: the name as written
    wanted = expected_name(entry, defines)
    demangled = demangle(list(symbols))
    for symbol, readable in zip(symbols, demangled, strict=True):
        name = function_name(readable)
        if name == wanted or name.endswith("::" + wanted):
            return symbol
    shown = ", ".join(sorted({function_name(d) for d in demangled}))[:400] or "none"
    raise HyperloomError(
        f"the code object has no kernel {wanted!r} (it has: {shown})",
        "set the variant's entry to one of those names (a template instance as name<ARGS>, its arguments defines or numbers)",
    )


def function_name(demangled: str) -> str:
    """`void rms_norm_f32<256>(float const*, ...)` -> `rms_norm_f32<256>`: the name without return type and parameters."""
    depth, cut = 0, len(demangled)
    for index, char in enumerate(demangled):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and index > 0:
            cut = index
            break
    head, depth, start = demangled[:cut], 0, 0
    for index, char in enumerate(head):  # the return type ends at the last space outside template brackets
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == " " and depth == 0:
            start = index + 1
    return _compact(head[start:])


def demangle(symbols: list[str]) -> list[str]:
    """Itanium names as C++ (llvm-cxxfilt, else c++filt); names that are not mangled come back as they are."""
    if not any(s.startswith("_Z") for s in symbols):
        return symbols
    tool = find_tool("llvm-cxxfilt")
    path = tool.path or find_tool("c++filt").path
    if path is None:
        raise HyperloomError("a C++ kernel name needs a demangler, and neither llvm-cxxfilt nor c++filt was found",
                             "install llvm-19 (llvm-cxxfilt) or binutils (c++filt), or declare the kernel extern \"C\"")
    try:
        proc = subprocess.run([path], input="\n".join(symbols) + "\n", capture_output=True, text=True, timeout=DEMANGLE_TIMEOUT_S,
                              check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise HyperloomError(f"demangling the kernel names failed ({exc})", "check the demangler with `hyperloom toolchain`") from exc
    lines = proc.stdout.splitlines()
    return lines if len(lines) == len(symbols) else symbols


def exported_functions(library: Path) -> list[str]:
    """The function symbols a host shared library exports (nm -D), for C++ twins' mangled names."""
    nm = find_tool("nm").path or find_tool("llvm-nm").path
    if nm is None:
        raise HyperloomError("listing a C++ twin's functions needs nm", "install binutils (nm), or declare the function extern \"C\"")
    try:
        proc = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True, timeout=DEMANGLE_TIMEOUT_S,
                              check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise HyperloomError(f"nm could not list {library.name} ({exc})", "check the build with compile_kernel") from exc
    return [parts[2] for parts in (line.split() for line in proc.stdout.splitlines()) if len(parts) == 3 and parts[1] in "TtWw"]


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)
