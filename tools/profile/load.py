"""Read a trace file of any supported kind, or refuse it with the reason: truncated, not JSON, another tool's, empty."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.profile.names import repaired
from hyperloom.tools.profile.parse_chrome import NEXT_STEP, parse_chrome
from hyperloom.tools.profile.parse_rocprof import is_kernel_trace_header, parse_rocprof
from hyperloom.tools.profile.trace import Trace

try:  # orjson parses a 100 MB trace 3-4x faster than json; the stdlib is the fallback
    import orjson

    def _loads(data: bytes) -> Any:
        return orjson.loads(data)
except ImportError:  # pragma: no cover - depends on the environment
    def _loads(data: bytes) -> Any:
        return json.loads(data)

SQLITE_MAGIC = b"SQLite format 3\x00"


def read_trace(path: Path, label: str) -> Trace:
    """The Trace in `path`: a torch.profiler Chrome trace (.json, .json.gz) or a rocprofv3 kernel trace CSV."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise HyperloomError(f"{label} is a gzip file that does not decompress ({exc}): it looks truncated",
                                 "copy the trace again in full, or pass the uncompressed .json") from exc
    if not raw.strip():
        raise HyperloomError(f"{label} is empty", "pass a trace file the profiler finished writing")
    if raw.startswith(SQLITE_MAGIC):
        raise HyperloomError(f"{label} is a SQLite database (rocprofv3's rocpd output or an nsys export), which profile does not read",
                             "run rocprofv3 with --kernel-trace --output-format csv and pass <prefix>_kernel_trace.csv")
    head = raw[:4096].lstrip()
    if head[:1] in (b"{", b"["):
        return parse_chrome(_json(raw, label), label)
    first_line = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    if is_kernel_trace_header(first_line):
        return parse_rocprof(raw.decode("utf-8", "replace"), path, label)
    if "Start_Timestamp" in first_line:
        raise HyperloomError(f"{label} is a rocprofv3 trace of something other than kernels ({first_line[:80]}…)",
                             "pass the <prefix>_kernel_trace.csv from the same rocprofv3 run")
    raise HyperloomError(f"{label} is neither JSON nor a rocprofv3 CSV (it starts with {raw[:24]!r})", NEXT_STEP)


def _json(raw: bytes, label: str) -> Any:
    try:
        return _loads(raw)
    except ValueError as exc:  # json.JSONDecodeError and orjson.JSONDecodeError are both ValueErrors
        try:  # torch's export can leave frame names unescaped (names.py)
            return _loads(repaired(raw.decode("utf-8", "replace")).encode())
        except ValueError:
            pass
        end = raw.rstrip()
        if not end.endswith((b"}", b"]")):  # a whole JSON document ends by closing its object or array
            raise HyperloomError(f"{label} ends before its JSON does (at byte {len(end)}): the file is truncated",
                                 "let the profiler finish writing the trace (or copy it again in full)") from exc
        raise HyperloomError(f"{label} is not valid JSON ({str(exc)[:160]})", NEXT_STEP) from exc
