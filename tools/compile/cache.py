"""The build cache: a code object stored under the hash of everything that determines it.

The key covers the source, the command line, the compiler's identity and version, and the
shipped prelude. Headers the source includes from the workspace are recorded with their hashes
at build time; a later lookup is a hit only while every one of them is unchanged. System headers
are covered by the compiler version.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.cache import cache_dir
from hyperloom.core.hashing import sha256_file, sha256_json

CODE_OBJECT = "code.object"
RECORD = "record.json"


@dataclass(frozen=True)
class Entry:
    folder: Path
    record: dict

    @property
    def code_object(self) -> Path:
        return self.folder / CODE_OBJECT


def build_key(material: dict) -> str:
    return sha256_json(material)


def parse_depfile(text: str) -> list[Path]:
    """The prerequisites of a make-style depfile (`out: a.h b.h \\` …), spaces escaped as `\\ `."""
    body = text.replace("\\\n", " ")
    _, _, prerequisites = body.partition(": ")
    return [Path(token.replace("\\ ", " ")) for token in re.findall(r"(?:\\ |\S)+", prerequisites)]


def tracked_dependencies(paths: list[Path], roots: list[Path]) -> dict[str, str]:
    """sha256 of each prerequisite that lies under one of `roots` (the workspace, the prelude)."""
    tracked = {}
    for path in paths:
        resolved = path.resolve()
        if any(root == resolved or root in resolved.parents for root in roots) and resolved.is_file():
            tracked[str(resolved)] = sha256_file(resolved)
    return tracked


def lookup(key: str) -> Entry | None:
    folder = cache_dir("compile") / key
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    for path, digest in record.get("dependencies", {}).items():
        if not Path(path).is_file() or sha256_file(Path(path)) != digest:
            return None
    if not (folder / CODE_OBJECT).is_file():
        return None
    return Entry(folder, record)


def store(key: str, code_object: Path, record: dict) -> Entry:
    """Write an entry once: staged beside it, then renamed into place. When processes build the same key at once
    the first rename wins and the others discard their copy (the content is the same, by its key)."""
    folder = cache_dir("compile") / key
    if (folder / CODE_OBJECT).is_file() and (folder / RECORD).is_file():
        return Entry(folder, record)
    staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", suffix=".staging", dir=folder.parent))
    try:
        shutil.copyfile(code_object, staging / CODE_OBJECT)
        (staging / RECORD).write_text(json.dumps(record, indent=1))
        try:
            os.rename(staging, folder)  # fails when another writer's entry is already there
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not (folder / CODE_OBJECT).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Entry(folder, record)
