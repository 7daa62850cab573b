"""A workload run once in the caller's own process, as a worker would build and step it: the factory loaded and called
with its knobs typed as the worker types them, inputs(0) where it takes inputs, one step() and outputs(). What a
refusal offers as the way to see a failure's whole traceback (`alone_command`)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from typing import Any

from hyperloom.core.factory import declared_knobs, knob_values, load_factory


def run_once(workload: str, knobs: dict[str, str] | None = None) -> Any:
    """Build `workload` (file.py:function or module:function), then inputs(0), step() and outputs() once; its outputs."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # module:function imports from the workspace root, as in the worker
    factory = load_factory(workload)
    made = factory(**knob_values(declared_knobs(factory), dict(knobs or {})))
    inputs = getattr(made, "inputs", None)
    if callable(inputs):
        inputs(0)
    step = made.step if callable(getattr(made, "step", None)) else made
    step()
    outputs = getattr(made, "outputs", None)
    result = outputs() if callable(outputs) else None
    print(f"{workload}: built, inputs(0), step() and outputs() ran", file=sys.stderr)
    return result


def alone_command(workload: str, knobs: dict[str, str], kind: str = "function", args: tuple[str, ...] = ()) -> str:
    """The one-line shell command that runs `workload` once in the user's Python (run_once; a script: the script)."""
    python = ("python" if shutil.which("python") and os.path.realpath(shutil.which("python") or "") == os.path.realpath(sys.executable)
              else sys.executable)
    if kind == "script":
        return shlex.join([python, workload, *args])
    call = f"run_once({json.dumps(workload)}" + (f", {json.dumps(knobs)}" if knobs else "") + ")"
    return f"{python} -c {shlex.quote('from hyperloom.tools.workload.alone import run_once; ' + call)}"
