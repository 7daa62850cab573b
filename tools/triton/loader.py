"""Host side: is Triton installed, and what does a kernel file say about its entry (asked in a worker, cached).

Nothing here imports the user's file or Triton itself: `describe_kernel` runs `describe.py` in a
worker process (hyperloom.core.worker) and caches its answer by the content of the kernel's folder.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file, sha256_json
from hyperloom.core.toolchain import find_tool
from hyperloom.core.worker import run_worker
from hyperloom.core.workspace import Workspace
from hyperloom.tools.triton.models import KernelInfo

DESCRIBE_TIMEOUT_S = 120.0
INSTALL = "pip install 'hyperloom[triton]' (it brings triton>=3.5); the CPU interpreter also needs torch (a CPU build is enough)"
_memo: dict[str, KernelInfo] = {}
_lock = threading.Lock()


def triton_version() -> str:
    """The installed triton's version, or one clear error naming the extra to install."""
    try:
        version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        version = None
    if version is None or importlib.util.find_spec("triton") is None:
        raise HyperloomError("Triton kernels need the triton package, which is not installed in this Python", INSTALL)
    return version


def folder_digest(source: Path) -> str:
    """The kernel file and the Python modules beside it (it may import them): what its meaning depends on."""
    files = sorted({source, *source.parent.glob("*.py")})
    return sha256_json({p.name: sha256_file(p) for p in files if p.is_file()})


def describe_kernel(source: Path, entry: str, workspace: Workspace, *, timeout_s: float = DESCRIBE_TIMEOUT_S) -> KernelInfo:
    """The entry's parameters (constexpr or not), @triton.autotune configs and heuristics; the file imported in a worker."""
    version = triton_version()
    key = sha256_json({"folder": folder_digest(source), "source": source.name, "entry": entry, "triton": version, "format": 1})
    with _lock:
        if key in _memo:
            return _memo[key]
    stored = workspace.state_dir("triton", "describe") / f"{key[:32]}.json"
    if stored.is_file():
        info = KernelInfo.model_validate_json(stored.read_text())
    else:
        outcome = run_worker("hyperloom.tools.triton.describe:describe_payload", {"source": str(source), "entry": entry},
                             timeout_s=timeout_s, env=worker_env())
        if not outcome.ok:
            raise HyperloomError(f"reading {source.name} in a worker failed: {outcome.describe()}",
                                 "run the file with python to see the error; the kernel file must import without side effects "
                                 "that need a GPU")
        info = KernelInfo.model_validate(raise_for_error(outcome.result, source, entry))
        write_bytes_atomic(stored, info.model_dump_json().encode())
    with _lock:
        _memo[key] = info
    return info


def raise_for_error(result: Any, source: Path, entry: str) -> Any:
    """A worker's structured error ({"error": {kind, message, where}}) as a HyperloomError with its next step."""
    if not isinstance(result, dict) or "error" not in result:
        return result
    error = result["error"]
    kind, message, where = error.get("kind", ""), error.get("message", ""), error.get("where", "")
    at = f" at {where}" if where else ""
    if kind == "import":
        raise HyperloomError(f"{source.name} fails to import: {message}{at}",
                             "fix the error at that line (run `python " + source.name
                             + "` to reproduce); a module it imports must be installed or lie beside it")
    if kind == "entry":
        raise HyperloomError(f"entry {entry!r}: {message}",
                             "set the variant's entry to the @triton.jit function's name (for an @triton.autotune or @triton.heuristics "
                             "kernel, the name they decorate)")
    if kind == "heuristics":
        raise HyperloomError(message, "fix the heuristic, or give that constexpr a value in defines (it then overrides the heuristic)")
    raise HyperloomError(f"{source.name}: {message}{at}", "fix the kernel file")


def worker_env() -> dict[str, str]:
    """The environment of Triton workers: Triton's own cache in Hyperloom's cache folder, fp fusion as Triton's default."""
    env = dict(os.environ)
    env.setdefault("TRITON_CACHE_DIR", str(cache_dir("triton")))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    env.pop("TRITON_INTERPRET", None)  # the interpreter is asked for explicitly, never inherited
    if "TRITON_HIP_LLD_PATH" not in env and (lld := find_tool("ld.lld").path):
        env["TRITON_HIP_LLD_PATH"] = lld  # Triton before 3.5 links AMD code objects with an ld.lld it looks for under /opt/rocm
    return env
