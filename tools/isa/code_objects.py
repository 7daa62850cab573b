"""The code objects isa_audit reads: the files named, and the ELF or offload bundles under named folders."""

from __future__ import annotations

import os
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.codeobj.formats import BUNDLE_MAGIC, ELF_MAGIC

MAX_FILES = 1000


def code_object_files(raw_paths: list[str], workspace: Workspace) -> list[Path]:
    """The files named, and the code objects (ELF or offload bundle) found under named folders.

    Links that lead out of the workspace are not followed.
    """
    files: list[Path] = []
    for raw in raw_paths:
        path = workspace.resolve(raw)
        if not path.is_dir():
            files.append(path)
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                real = Path(os.path.realpath(Path(root) / name))
                if workspace.root in real.parents and real.is_file() and _looks_like_code_object(real):
                    files.append(real)
            if len(files) > MAX_FILES:
                raise HyperloomError(f"more than {MAX_FILES} code objects under {raw!r}",
                                     "name the folders or files to audit more narrowly")
    if not files:
        raise HyperloomError(f"no code objects (ELF or offload bundle) under {', '.join(raw_paths)}",
                             "pass .hsaco/.co files or folders holding them")
    return list(dict.fromkeys(files))


def _looks_like_code_object(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(BUNDLE_MAGIC))
    except OSError:
        return False
    return head.startswith(ELF_MAGIC) or head.startswith(BUNDLE_MAGIC)
