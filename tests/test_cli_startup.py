"""`hyperloom` imports what the chosen command needs, when it runs: the start-up figures in
bench/cli_startup.py rest on these import sets."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from helpers import save

# Runs one command in a fresh interpreter and prints which of the watched modules it imported.
CHILD = r"""
import contextlib, io, json, sys
from hyperloom.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
watched = ("pydantic", "numpy", "mcp", "jsonschema", "anyio")
print(json.dumps({
    "third_party": [m for m in watched if m in sys.modules],
    "tools": sorted({m.split(".")[2] for m in sys.modules if m.startswith("hyperloom.tools.") and m != "hyperloom.tools.catalog"}),
}))
"""


def imported_by(*argv: str) -> dict[str, list[str]]:
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_version_imports_no_tool_and_no_third_party_module():
    assert imported_by("--version") == {"third_party": [], "tools": []}


def test_the_command_list_imports_no_tool():
    assert imported_by("--help")["tools"] == []


def test_a_gate_check_imports_the_gate_and_neither_the_mcp_sdk_nor_jsonschema(workspace):
    ref = save(workspace, "r.npy", np.zeros(3))
    seen = imported_by("gate", "check", "--candidate", ref, "--reference", ref, "--atol", "0", "--rtol", "0")
    assert seen["tools"] == ["gate"]
    assert "mcp" not in seen["third_party"] and "jsonschema" not in seen["third_party"]


def test_the_help_of_one_tool_command_imports_only_that_tools_models():
    seen = imported_by("census", "--help")
    assert seen["tools"] == ["isa"] and "numpy" not in seen["third_party"]
