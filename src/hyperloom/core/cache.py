"""Where tools keep content-addressed caches (census results, compiled code objects, …)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "HYPERLOOM_CACHE_DIR"


def cache_root() -> Path:
    """`HYPERLOOM_CACHE_DIR`, else `$XDG_CACHE_HOME/hyperloom`, else `~/.cache/hyperloom`."""
    if configured := os.environ.get(CACHE_ENV):
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "hyperloom"


def cache_dir(tool: str) -> Path:
    """A tool's own cache folder, created on first use."""
    folder = cache_root() / tool
    folder.mkdir(parents=True, exist_ok=True)
    return folder
