"""The kernels the package ships: kernels/ in the repository, hyperloom/kernels/ in the wheel."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic


def shipped_kernels(*parts: str) -> Path:
    """A shipped kernel folder or file, e.g. shipped_kernels("runtime", "timing.hip")."""
    return Path(str(resources.files("hyperloom").joinpath("kernels", *parts)))


def stage_shipped_file(folder: Path, *parts: str) -> Path:
    """Copy one shipped file into `folder` (where compile_kernel may read it) unless an identical copy
    is there; written atomically, so processes staging it at once never read half a file."""
    data = shipped_kernels(*parts).read_bytes()
    staged = folder / parts[-1]
    if not staged.is_file() or staged.read_bytes() != data:
        write_bytes_atomic(staged, data)
    return staged
