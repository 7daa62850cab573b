"""Replaying the recorded detect roots under tests/fixtures/detect."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from helpers import FIXTURES
from hyperloom.tools.detect.detect import detect
from hyperloom.tools.detect.models import DetectResult, Finding
from hyperloom.tools.detect.root import SystemView

ROOTS = FIXTURES / "detect"
PARSERS = FIXTURES / "detect-parsers"


def replay(name: str | Path, env: Mapping[str, str] | None = None, timeout_s: float = 10.0) -> DetectResult:
    root = name if isinstance(name, Path) else ROOTS / name
    return detect(SystemView(root, timeout_s, env_override=dict(env or {})))


def check(result: DetectResult, name: str) -> list[Finding]:
    found = [f for f in result.findings if f.check == name]
    assert found, f"no finding {name}: {[f.check for f in result.findings]}"
    return found


def one(result: DetectResult, name: str) -> Finding:
    (only,) = check(result, name)
    return only


def command_file(root: str, command: str) -> Path:
    from hyperloom.tools.detect.root import recorded_name

    return ROOTS / root / "commands" / recorded_name(command)
