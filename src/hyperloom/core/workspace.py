"""The workspace path policy: caller paths resolve inside one root, never outside it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.errors import HyperloomError

WORKSPACE_ENV = "HYPERLOOM_WORKSPACE"


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

    def resolve(self, raw: str, *, must_exist: bool = True, suffix: str | None = None) -> Path:
        """Resolve `raw` (relative to the root, or absolute) with `..` and symlinks followed.

        Refuses anything whose real location lies outside the root.
        """
        if not isinstance(raw, str) or not raw.strip():
            raise HyperloomError("an empty path was given", "pass a file path relative to the workspace root")
        if "\x00" in raw:
            raise HyperloomError(f"the path {raw!r} contains a NUL byte", "pass a plain file path")
        given = Path(raw).expanduser()
        joined = given if given.is_absolute() else self.root / given
        real = Path(os.path.realpath(joined))
        if real != self.root and self.root not in real.parents:
            raise HyperloomError(
                f"the path {raw!r} resolves to {real}, outside the workspace {self.root}",
                f"use a path inside {self.root}, or start the server with {WORKSPACE_ENV} set to a folder that contains it",
            )
        if suffix is not None and real.suffix.lower() != suffix:
            raise HyperloomError(
                f"{raw!r} is not a {suffix} file",
                f"pass a {suffix} file" + (" (save arrays with numpy.save)" if suffix == ".npy" else ""),
            )
        if must_exist and not real.exists():
            raise HyperloomError(
                f"{raw!r} does not exist (looked for {real})",
                "check the path; relative paths start at the workspace root " + str(self.root),
            )
        return real

    def relative(self, path: Path) -> str:
        """How a resolved path is shown back to callers: relative to the root."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
