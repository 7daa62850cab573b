"""Worker process entry: `python -m hyperloom.core.worker_main REQUEST.json RESULT.json`.

Imports the requested function, calls it with the payload and writes {"ok": true, "result": …};
an exception, `sys.exit` included, is written as {"ok": false, …} with the innermost frame of
the code that raised it. A crash or a hang ends this process; `run_worker` reports those.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import site
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any, NoReturn

import hyperloom
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.factory import WorkloadContractError

MESSAGE_CHARS = 2000


def _libraries() -> tuple[str, ...]:
    """Where installed code lives (the standard library, site-packages): frames there are no user's code."""
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    return tuple(str(Path(p)) + "/" for p in paths if p)


def _shown(frame: traceback.FrameSummary, libraries: tuple[str, ...]) -> str:
    """A frame as file:line, its file relative to the working folder (the workspace root) or to its library's folder."""
    name = frame.filename
    # site-packages, not the venv's lib/ above it
    base = max((lib for lib in libraries if name.startswith(lib)), key=len, default=str(Path.cwd()) + "/")
    return f"{name[len(base):] if name.startswith(base) else name}:{frame.lineno}"


def _innermost(exc: BaseException) -> str:
    """file:line of the innermost frame of the user's code (outside Hyperloom's package, the standard library and
    site-packages): where their code called what raised, with the library's frame that raised beside it (a step that
    fails inside torch names the user's line, not torch's); and where a lever's code of ours sat in the user's call path
    (user code -> our lever -> a library that raised: decode_loop's forward into transformers), the innermost such frame
    of ours, which the library frame alone would hide."""
    ours = str(Path(hyperloom.__file__).parent)
    libraries = _libraries()
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f.filename.startswith(ours) for f in frames]
    if isinstance(exc, WorkloadContractError) and all(mine):
        return ""  # a refusal of ours (the contract), raised in our code: its message names the cause, our line would mislead
    outside = [f for f, m in zip(frames, mine) if not m] or frames
    if not outside:
        return ""
    users = [f for f in outside if not f.filename.startswith(libraries) and not f.filename.startswith("<")]
    where = _shown(users[-1], libraries) if users else _shown(outside[-1], libraries)
    if users and users[-1] is not outside[-1]:
        where += f" (raised in {_shown(outside[-1], libraries)})"
    first_outside = mine.index(False) if False in mine else len(mine)
    lever = [f for i, (f, m) in enumerate(zip(frames, mine)) if m and i > first_outside]  # ours, called from outside code
    if lever and mine[-1] is False:
        inner = lever[-1]
        where += f" (through hyperloom/{Path(inner.filename).relative_to(ours)}:{inner.lineno})"
    return where


def call_entry(entry: str, payload: Any) -> dict[str, Any]:
    """Import `entry` ("module:function"), call it with the payload; the report run_worker reads."""
    module_name, _, function_name = entry.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
        return {"ok": True, "result": function(payload)}
    except BaseException as exc:  # noqa: BLE001 - user code: every ending is reported, SystemExit and KeyboardInterrupt too
        if isinstance(exc, SystemExit):
            message = f"the code called sys.exit({exc.code!r})"
        else:
            message = f"{type(exc).__name__}: {str(exc)[:MESSAGE_CHARS]}"
        return {"ok": False, "error_type": type(exc).__name__, "message": message, "where": _innermost(exc),
                "traceback": "".join(traceback.format_exception(exc))[-4000:]}


def leave(code: int = 0) -> NoReturn:
    """End the worker now, its answer written: stdio flushed, the interpreter's teardown skipped (with torch and a model
    loaded it takes about half a second, which the controller would wait for on every worker; the parent kills the
    process group after anyway, so nothing the teardown would stop is left running)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    report = call_entry(request["entry"], request["payload"])
    write_bytes_atomic(Path(argv[1]), json.dumps(report, default=str).encode())
    return 0


if __name__ == "__main__":
    leave(main(sys.argv[1:]))
