"""Compiler messages → structured diagnostics; clang's resource remarks → per-kernel figures."""

from __future__ import annotations

import re

from hyperloom.tools.compile.models import Diagnostic

# clang / llvm-mc:  file:12:5: error: message        nvcc (front end):  file(12): error: message
_CLANG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note): (?P<msg>.*)$")
_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>error|warning|note)[^:]*: (?P<msg>.*)$")
# tool-level messages: "clang: error: …", "ptxas error   : …", "error: …"
_BARE = re.compile(r"^(?:[\w.+-]+:?\s+)?(?P<sev>fatal error|error|warning)\s*:\s+(?P<msg>.*)$")
_REMARK = re.compile(r"remark: +(?P<key>[A-Za-z][A-Za-z ]*?(?: \[[^\]]+\])?): (?P<value>\S+) \[-Rpass-analysis=kernel-resource-usage\]")
_FEATURE = re.compile(r"needs target feature (?P<feature>[\w.,+-]+)")


def parse_diagnostics(text: str) -> list[Diagnostic]:
    found = []
    for line in text.splitlines():
        line = line.rstrip()
        if match := _CLANG.match(line) or _NVCC.match(line):
            col = match.groupdict().get("col")
            found.append(
                Diagnostic(
                    file=match["file"], line=int(match["line"]), column=int(col) if col else None,
                    severity=match["sev"], message=match["msg"],
                )
            )
        elif match := _BARE.match(line):
            severity = "error" if "error" in match["sev"] else "warning"
            found.append(Diagnostic(file="", line=None, column=None, severity=severity, message=match["msg"]))
    return found


def parse_remarks(text: str) -> dict[str, dict[str, str]]:
    """clang's kernel-resource-usage remarks, per function name: {'rowsum': {'VGPRs': '9', …}}."""
    kernels: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if match := _REMARK.search(line):
            key, value = match["key"].strip(), match["value"]
            if key == "Function Name":
                current = kernels.setdefault(value, {})
            elif current is not None:
                current[key] = value
    return kernels


def failure_summary(diagnostics: list[Diagnostic], target: str) -> str:
    """One line for a failed build; a missing target feature is named as such."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if not errors:
        return f"the build for {target} failed without an error message; read the log"
    first = errors[0]
    if match := _FEATURE.search(first.message):
        return f"not available on {target}: {first.message} (feature {match['feature']} is missing on {target}; guard the code with #if for targets that have it)"
    where = f"{first.file}:{first.line}:{first.column}: " if first.line else ""
    more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
    return f"{where}{first.message}{more}"
