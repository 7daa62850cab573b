"""Where detect reads the machine from: the live system, or a root directory standing in for it.

A root holds `sys/`, `dev/`, `proc/` as captured, and `commands/<tool> <args>.txt`, the recorded
output of each command (with `/` in arguments written `%2F`). A command without a recording counts as a tool that is not installed.
Every read and every command reports what it was and what it gave; nothing here raises.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hyperloom.core.hashing import sha256_bytes
from hyperloom.core.toolchain import KNOWN_TOOLS, find_tool

ROOT_ENV = "HYPERLOOM_DETECT_ROOT"
DEFAULT_TIMEOUT_S = 10.0
_MAX_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Output:
    """What one command gave: its text (stdout then stderr), or why there is none."""

    command: str
    text: str | None
    returncode: int | None = None
    missing: bool = False
    timed_out: bool = False
    error: str | None = None
    version: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def sha256(self) -> str:
        return sha256_bytes((self.text or self.error or "").encode())

    def why_not(self, timeout_s: float) -> str:
        """One phrase saying why there is no output."""
        if self.missing:
            return f"`{self.command.split()[0]}` is not installed"
        if self.timed_out:
            return f"`{self.command}` did not answer within {timeout_s:g} s"
        return f"`{self.command}` failed: {self.error}"


@dataclass(frozen=True)
class FileRead:
    path: str
    text: str | None
    error: str | None = None

    @property
    def sha256(self) -> str:
        return sha256_bytes((self.text or self.error or "").encode())


@dataclass
class SystemView:
    """The machine as detect sees it: the live system when `root` is None, else a captured root."""

    root: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    env_override: Mapping[str, str] | None = None
    _cache: dict[tuple[str, tuple[str, ...]], Output] = field(default_factory=dict)

    @property
    def replayed(self) -> bool:
        return self.root is not None

    def describe(self) -> str:
        return f"recorded root {self.root}" if self.root is not None else "this machine"

    def _path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/") if self.root is not None else Path(absolute)

    def read(self, absolute: str) -> FileRead:
        """A sysfs/procfs/dev file as text; unreadable, missing or binary files give an error, never raise."""
        try:
            with self._path(absolute).open("rb") as handle:
                data = handle.read(_MAX_READ_BYTES)
            return FileRead(absolute, data.decode("utf-8"))
        except FileNotFoundError:
            return FileRead(absolute, None, "does not exist")
        except (OSError, UnicodeDecodeError) as exc:
            return FileRead(absolute, None, f"unreadable ({type(exc).__name__}: {exc})")

    def exists(self, absolute: str) -> bool:
        return self._path(absolute).exists()

    def listdir(self, absolute: str) -> list[str]:
        try:
            return sorted(os.listdir(self._path(absolute)))
        except OSError:
            return []

    def environ(self) -> Mapping[str, str]:
        """The environment the GPU stack will see: the live one, or the root's proc/self/environ."""
        if self.env_override is not None:
            return self.env_override
        if self.root is None:
            return os.environ
        recorded = self.read("/proc/self/environ")
        pairs = (item.split("=", 1) for item in (recorded.text or "").split("\0") if "=" in item)
        return {key: value for key, value in pairs}

    def run(self, tool: str, *args: str) -> Output:
        """Run `tool args` (an argument list, never a shell) with a timeout, or replay its recording."""
        key = (tool, args)
        if key not in self._cache:
            self._cache[key] = self._replay(tool, args) if self.root is not None else self._execute(tool, args)
        return self._cache[key]

    def _replay(self, tool: str, args: tuple[str, ...]) -> Output:
        command = " ".join((tool, *args))
        recorded = self.root / "commands" / recorded_name(command)  # type: ignore[operator]
        if not recorded.is_file():
            return Output(command, None, missing=True)
        try:
            return Output(command, recorded.read_text(encoding="utf-8", errors="replace"), returncode=0)
        except OSError as exc:
            return Output(command, None, error=str(exc))

    def _execute(self, tool: str, args: tuple[str, ...]) -> Output:
        command = " ".join((tool, *args))
        info = find_tool(tool, version_timeout_s=None)  # the timed call first: a hanging tool costs timeout_s once, not twice
        if info.path is None:
            return Output(command, None, missing=True)
        try:
            proc = subprocess.run(
                [info.path, *args],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Output(command, None, timed_out=True)
        except OSError as exc:
            return Output(command, None, error=str(exc))
        text = proc.stdout + (("\n" + proc.stderr) if proc.stderr.strip() else "")
        return Output(command, text, returncode=proc.returncode, version=find_tool(tool, version_timeout_s=self.timeout_s).version)


def recorded_name(command: str) -> str:
    """The file a command's output is recorded in: `/` cannot stand in a file name, so it is written %2F (and % as %25)."""
    return command.replace("%", "%25").replace("/", "%2F") + ".txt"


def install_hint(tool: str) -> str:
    spec = KNOWN_TOOLS.get(tool)
    return (spec.install_hint if spec and spec.install_hint else f"install {tool}")


def system_from(root: str | None, timeout_s: float) -> SystemView:
    """The live system, or the root named by the request or by HYPERLOOM_DETECT_ROOT."""
    chosen = root or os.environ.get(ROOT_ENV)
    return SystemView(Path(chosen) if chosen else None, timeout_s)
