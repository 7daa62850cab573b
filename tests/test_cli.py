"""The `hyperloom` command: same models as the server, tables for people, JSON on request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import copy_kernel, save
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.tools.catalog import CATALOG

CLI = Path(sys.executable).parent / "hyperloom"


def test_gate_check_prints_a_table_and_exits_by_verdict(workspace, capsys):
    ref = save(workspace, "r.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    bad = save(workspace, "c.npy", np.array([[0, 1, 2], [3, 4, 9]], np.float32))
    assert main(["gate", "check", "--candidate", ref, "--reference", ref, "--atol", "0", "--rtol", "0"]) == EXIT_OK
    assert "PASS" in capsys.readouterr().out
    code = main(["gate", "check", "--candidate", bad, "--reference", ref, "--atol", "0", "--rtol", "0", "--case-name", "tail"])
    out = capsys.readouterr().out
    assert code == EXIT_FAILED_VERDICT and "tail: 1 of 6 elements out of tolerance" in out and "at [1, 2]" in out


def test_gate_check_json_is_the_result_model(workspace, capsys):
    ref = save(workspace, "r.npy", np.ones(4))
    main(["gate", "check", "--candidate", "[1, 1, 1, 2]", "--reference", ref, "--atol", "0.5", "--rtol", "0", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False and result["cases"][0]["candidate_dtype"] == "float64"


def test_freeze_then_check_against_the_frozen_set(workspace, capsys):
    ref = save(workspace, "r.npy", np.ones(4, np.float32))
    assert main(["gate", "freeze", "--out", "set", "--reference", ref, "--atol", "0.1", "--rtol", "0"]) == EXIT_OK
    assert "froze 1 reference(s) into set" in capsys.readouterr().out
    assert main(["gate", "check", "--candidate", ref, "--reference-set", "set"]) == EXIT_OK


def test_bad_input_is_one_line_on_stderr_and_exit_2(workspace, capsys):
    code = main(["gate", "check", "--candidate", "../x.npy", "--reference", "x.npy", "--atol", "0", "--rtol", "0"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_INPUT_ERROR and err.count("\n") == 0 and "outside the workspace" in err and "Next step" in err
    code = main(["gate", "check", "--candidate", "a.npy", "--reference", "a.npy", "--atol", "-1", "--rtol", "0"])
    assert code == EXIT_INPUT_ERROR and "atol" in capsys.readouterr().err


def test_tools_lists_every_tool_with_both_schemas(capsys):
    assert main(["tools", "--json"]) == EXIT_OK
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert set(listed) == {entry.name for entry in CATALOG}
    assert {"correctness_gate", "gate_freeze", "compile_kernel", "disasm_verify", "detect"} <= set(listed)
    assert all("inputSchema" in t and "outputSchema" in t for t in listed.values())


def test_toolchain_reports_every_known_tool(capsys):
    assert main(["toolchain", "--json"]) == EXIT_OK
    names = [t["name"] for t in json.loads(capsys.readouterr().out)]
    assert {"llvm-mc", "clang", "ld.lld", "hipcc", "nvcc", "nvidia-smi"} <= set(names)


def test_the_installed_command_runs_from_any_directory(workspace):
    ref = save(workspace, "r.npy", np.zeros(3))
    proc = subprocess.run(
        [str(CLI), "gate", "check", "--candidate", ref, "--reference", ref, "--atol", "0", "--rtol", "0"],
        capture_output=True, text=True, cwd=workspace.root, timeout=60, check=False,
    )
    assert proc.returncode == 0 and "PASS" in proc.stdout
    proc = subprocess.run([str(CLI), "gate", "check", "--candidate", "x.npy"], capture_output=True, text=True, cwd=workspace.root, timeout=60, check=False)
    assert proc.returncode == 2 and "Next step" in proc.stderr


@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None, reason="LLVM is not installed; .ci/run installs clang-19")
def test_compile_then_verify_print_their_reports_and_exit_by_verdict(workspace, capsys):
    copy_kernel(workspace, "dot8.hip")
    assert main(["compile", "--source", "dot8.hip", "--target", "gfx1201", "--json"]) == EXIT_OK
    code_object = json.loads(capsys.readouterr().out)["builds"][0]["code_object"]
    assert main(["verify", "--code-object", code_object, "--expect", "v_dot8_i32_iu4"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "v_dot8_i32_iu4" in out and out.rstrip().endswith("kernel(s) for gfx1201") and "evidence: MEASURED" in out
    assert main(["verify", "--code-object", code_object, "--forbid", "v_dot8_*"]) == EXIT_FAILED_VERDICT
    assert "FAIL" in capsys.readouterr().out
    assert main(["compile", "--source", "dot8.hip", "--target", "gfx942"]) == EXIT_FAILED_VERDICT
    assert "not available on gfx942" in capsys.readouterr().out
