"""sha256 digests of files, byte strings and canonical JSON."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_READ_BYTES = 1 << 22


def sha256_file(path: Path) -> str:
    """Stream a file through sha256 without holding it in memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        buffer = bytearray(max(1, min(_READ_BYTES, os.fstat(handle.fileno()).st_size)))  # a small file: no 4 MiB buffer to zero
        view = memoryview(buffer)
        while read := handle.readinto(buffer):
            digest.update(view[:read])
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """JSON with sorted keys and no whitespace, so equal values hash equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def sha256_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value))


def combine_digests(digests: Iterable[str]) -> str:
    """One digest standing for an ordered list of digests."""
    return sha256_bytes("\n".join(digests).encode())
