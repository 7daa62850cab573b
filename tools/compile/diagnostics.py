"""Compiler messages → structured diagnostics; clang's resource remarks → per-kernel figures."""

from __future__ import annotations

import re

from hyperloom.tools.compile.models import Diagnostic

# clang / llvm-mc:  file:12:5: error: message        nvcc (front end):  file(12): error: message
_CLANG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note): (?P<msg>.*)$")
_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>error|warning|note)[^:]*: (?P<msg>.*)$")
# tool-level messages: "clang: error: …", "ptxas error   : …", "error: …"
_BARE = re.compile(r"^(?:[\w.+<>-]+:?\s+)?(?P<sev>fatal error|error|warning)\s*:\s+(?P<msg>.*)$")
_REMARK = re.compile(r"remark: +(?P<key>[A-Za-z][A-Za-z ]*?(?: \[[^\]]+\])?): (?P<value>\S+) \[-Rpass-analysis=kernel-resource-usage\]")
FIRST_ERRORS = 3  # a failed build's summary quotes this many of the compiler's errors, with their places
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


def failure_summary(diagnostics: list[Diagnostic], target: str, log: str = "") -> str:
    """One line for a failed build: the compiler's first error with its place (a missing target feature named as
    such), or, when no line parses as an error, the log's last lines."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if not errors:
        tail = " | ".join(line.strip() for line in log.strip().splitlines()[-3:] if line.strip())
        return f"the build for {target} failed: {tail[:400]}" if tail else f"the build for {target} failed and the compiler printed nothing"
    first = errors[0]
    if match := _FEATURE.search(first.message):
        return (f"not available on {target}: {first.message} (feature {match['feature']} is missing on {target}; guard the code with #if "
                "for targets that have it)")
    shown = [_place(e) + e.message for e in errors[:FIRST_ERRORS]]
    more = f" (+{len(errors) - FIRST_ERRORS} more errors)" if len(errors) > FIRST_ERRORS else ""
    return " | ".join(shown) + more


def _place(diagnostic: Diagnostic) -> str:
    if not diagnostic.line:
        return f"{diagnostic.file}: " if diagnostic.file else ""
    column = f":{diagnostic.column}" if diagnostic.column else ""
    return f"{diagnostic.file}:{diagnostic.line}{column}: "
