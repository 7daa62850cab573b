"""Which caller flags may reach a compiler: an allow-list, so no flag can write or read outside the workspace."""

from __future__ import annotations

import re

from hyperloom.core.errors import HyperloomError

_CLANG_ALLOWED = (
    r"-W[a-z0-9][a-z0-9=-]*",
    r"-w",
    r"-ffast-math",
    r"-f(no-)?unroll-loops",
    r"-ffp-contract=(fast|on|off|fast-honor-pragmas)",
    r"-f(no-)?gpu-flush-denormals-to-zero",
    r"-f(no-)?finite-math-only",
    r"-m(no-)?cumode",
    r"-m(no-)?unsafe-fp-atomics",
    r"-mcode-object-version=[456]",
    r"-std=(c\+\+|gnu\+\+)(11|14|17|20)",
)
_NVCC_ALLOWED = (
    r"--use_fast_math",
    r"-lineinfo",
    r"--maxrregcount=\d{1,3}",
    r"--ftz=(true|false)",
    r"--fmad=(true|false)",
    r"--extra-device-vectorization",
    r"-std=c\+\+(11|14|17|20)",
    r"-W[a-z0-9][a-z0-9=-]*",
)
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+\-*/()<> ]*)?")


def check_flags(flags: list[str], compiler: str) -> list[str]:
    """The flags, unchanged, if every one is allowed for this compiler; else an error naming the first that is not."""
    allowed = _NVCC_ALLOWED if compiler == "nvcc" else _CLANG_ALLOWED
    for flag in flags:
        if not any(re.fullmatch(pattern, flag) for pattern in allowed):
            raise HyperloomError(
                f"the flag {flag!r} is not on {compiler}'s allow-list (flags that set outputs, temporaries, plugins or "
                "include paths are refused; use output_dir, include_dirs and defines instead)",
                "allowed: " + ", ".join(p.replace("\\", "") for p in allowed),
            )
    return flags


def check_defines(defines: list[str]) -> list[str]:
    """`-D` arguments for NAME or NAME=VALUE defines with plain values."""
    for define in defines:
        if not _DEFINE.fullmatch(define):
            raise HyperloomError(
                f"the define {define!r} is not NAME or NAME=VALUE with a plain value",
                "use letters, digits and _ for the name and a number or simple expression for the value",
            )
    return [f"-D{define}" for define in defines]
