"""The workspace path policy: every path a caller or a spec names, and every folder Hyperloom writes,
resolves inside one root, never outside it (through `..`, an absolute path or a symlink)."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hyperloom.core.errors import HyperloomError

WORKSPACE_ENV = "HYPERLOOM_WORKSPACE"
STATE_DIR = ".hyperloom"  # Hyperloom's own files in a workspace: builds, bench runs, tune sessions
MAX_PATH_CHARS = 1024
PathKind = Literal["any", "file", "dir"]


@dataclass(frozen=True)
class Workspace:
    """A directory that bounds every path a caller may name."""

    root: Path

    @classmethod
    def from_env(cls) -> Workspace:
        """`HYPERLOOM_WORKSPACE` when set, else the current working directory."""
        configured = os.environ.get(WORKSPACE_ENV)
        root = Path(configured) if configured else Path.cwd()
        if not root.is_dir():
            raise HyperloomError(
                f"{WORKSPACE_ENV}={configured!r} is not a directory",
                f"point {WORKSPACE_ENV} at an existing folder, or unset it to use the working directory",
            )
        return cls(Path(os.path.realpath(root)))

    @classmethod
    def at(cls, folder: Path) -> Workspace:
        """A workspace rooted at `folder` (its real path): tests, and the package's own shipped kernels."""
        return cls(Path(os.path.realpath(folder)))

    def resolve(self, raw: str, *, must_exist: bool = True, suffix: str | None = None, kind: PathKind = "any", what: str = "path") -> Path:
        """Resolve `raw` (relative to the root, or absolute) with `..` and symlinks followed.

        Refuses anything whose real location lies outside the root; `kind` says whether an
        existing path must be a file or a folder. `what` names the argument in messages.
        """
        if not isinstance(raw, str) or not raw.strip():
            raise HyperloomError(f"{what} is empty", "pass a path relative to the workspace root")
        if "\x00" in raw:
            raise HyperloomError(f"{what} contains a NUL byte", "pass a plain file path")
        if len(raw) > MAX_PATH_CHARS:
            raise HyperloomError(f"{what} is {len(raw)} characters long (limit {MAX_PATH_CHARS})", "pass a shorter path")
        given = Path(raw).expanduser()
        return self.check(given if given.is_absolute() else self.root / given, raw=raw, must_exist=must_exist, suffix=suffix, kind=kind,
                          what=what)

    def check(self, path: Path, *, raw: str | None = None, must_exist: bool = True, suffix: str | None = None,
              kind: PathKind = "any", what: str = "path") -> Path:
        """The real location of an already joined `path`, refused when it lies outside the root."""
        shown = _short(raw if raw is not None else str(path))
        try:
            real = Path(os.path.realpath(path))
            if not self.contains(real):
                raise HyperloomError(
                    f"{what} {shown} resolves to {_short(str(real))}, outside the workspace {self.root}",
                    f"use a path inside {self.root}, or start the server with {WORKSPACE_ENV} set to a folder that contains it",
                )
            if suffix is not None and real.suffix.lower() != suffix:
                raise HyperloomError(
                    f"{what} {shown} is not a {suffix} file",
                    f"pass a {suffix} file" + (" (save arrays with numpy.save)" if suffix == ".npy" else ""),
                )
            exists = real.exists()
            if must_exist and not exists:
                raise HyperloomError(f"{what} {shown} does not exist (looked for {_short(str(real))})",
                                     f"check the path; relative paths start at the workspace root {self.root}")
            if exists and kind == "file" and not real.is_file():
                raise HyperloomError(f"{what} {shown} is a folder, not a file", "pass a file inside it")
            if exists and kind == "dir" and not real.is_dir():
                raise HyperloomError(f"{what} {shown} is a file, not a folder", "pass a folder (or a new name for one)")
        except OSError as exc:
            cause = "a path component is too long" if exc.errno == errno.ENAMETOOLONG else (exc.strerror or type(exc).__name__)
            raise HyperloomError(f"{what} {shown} cannot be used ({cause})", "pass a shorter, plain path inside the workspace") from exc
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def state_dir(self, *parts: str) -> Path:
        """A folder of Hyperloom's own under `.hyperloom/` (created), refused if a symlink takes it outside the root."""
        folder = self.check(self.root.joinpath(STATE_DIR, *parts), must_exist=False, kind="dir", what=f"{STATE_DIR}/{'/'.join(parts)}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def relative(self, path: Path) -> str:
        """How a resolved path is shown back to callers: relative to the root."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def _short(text: str, limit: int = 160) -> str:
    """A path as shown in a message: quoted, and cut in the middle when long (never echoed at length)."""
    return repr(text if len(text) <= limit else text[: limit // 2] + "…" + text[-limit // 2 :])
