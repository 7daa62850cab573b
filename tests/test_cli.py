"""The `hyperloom` command: same models as the server, tables for people, JSON on request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, copy_kernel, save
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.tools.catalog import FAMILIES, mcp_tools
from hyperloom.validators.schemas import schema_errors

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
    assert set(listed) == {entry.name for entry in mcp_tools()}  # what the MCP server lists: a family is one tool
    assert {"correctness_gate", "gate_freeze", "compile_kernel", "disasm_verify", "detect", "bench", "roofline", "isa", "spec", "tune",
            "workload"} <= set(listed)
    families = {family.name for family in FAMILIES}  # a family's result depends on its action: no one output schema
    assert all("inputSchema" in t and ("outputSchema" in t) == (name not in families) for name, t in listed.items())


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
    proc = subprocess.run([str(CLI), "gate", "check", "--candidate", "x.npy"], capture_output=True, text=True, cwd=workspace.root,
                          timeout=60, check=False)
    assert proc.returncode == 2 and "Next step" in proc.stderr


@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                    reason="LLVM is not installed; .ci/run installs clang-19")
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
needs_llvm = pytest.mark.skipif(shutil.which("llvm-mc-19") is None, reason="llvm-mc-19 is not installed; .ci/run installs llvm-19")


@pytest.fixture
def llvm19(monkeypatch):
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(Path(shutil.which("llvm-mc-19") or "/nonexistent").resolve().parent))


@needs_llvm
def test_census_prints_a_summary_lists_on_request_and_probes(workspace, llvm19, capsys):
    assert main(["census", "gfx1201", "--match", "swmmac"]) == EXIT_OK
    out = capsys.readouterr().out
    # a listing leaves the capabilities to the plain census
    assert "v_swmmac_i32_16x16x64_iu4" in out and "MEASURED" in out and "proved by" not in out
    assert main(["census", "gfx1201", "--json"]) == EXIT_OK
    plain = json.loads(capsys.readouterr().out)
    assert plain["target"] == "gfx1201" and "dot8_int4_mixed_sign" in {c["name"] for c in plain["capabilities_present"]}
    assert main(["census", "gfx942", "--probe", "v_dot8_i32_iu4 v1, v2, v3, v4", "--probe", "v_dot8_i32_i4 v1, v2, v3, v4"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "not_supported_on_this_gpu" in out and "1 of 2 line(s) assemble for gfx942" in out


@needs_llvm
def test_census_check_reports_drift_from_committed_files(workspace, llvm19, capsys):
    results = workspace.root / "results"
    results.mkdir()
    shutil.copy(REPO / "results" / "isa" / "gfx90a.json", results / "gfx90a.json")
    assert main(["census", "gfx90a", "--check", "results"]) == EXIT_OK
    assert "gfx90a: no drift" in capsys.readouterr().out
    doc = json.loads((results / "gfx90a.json").read_text())
    doc["instructions"] = [i for i in doc["instructions"] if i["name"] != "v_pk_fma_f32"]
    (results / "gfx90a.json").write_text(json.dumps(doc))
    assert main(["census", "gfx90a", "--check", "results"]) == EXIT_FAILED_VERDICT
    out = capsys.readouterr().out
    assert "gfx90a: DRIFT" in out and "instructions added: v_pk_fma_f32" in out


@needs_llvm
def test_census_write_results_writes_schema_valid_files(workspace, llvm19, capsys):
    assert main(["census", "gfx908", "--write-results", "out"]) == EXIT_OK
    doc = json.loads((workspace.root / "out" / "gfx908.json").read_text())
    assert schema_errors("isa_census", doc) == [] and doc["target"] == "gfx908"
    assert "gfx908" in capsys.readouterr().out


@needs_llvm
def test_census_bad_input_is_one_line_and_exit_2(workspace, llvm19, capsys):
    assert main(["census"]) == EXIT_INPUT_ERROR
    assert "no target was given" in capsys.readouterr().err
    assert main(["census", "gfx1201", "gfx9999"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not know the target 'gfx9999'" in err and "gfx942" in err
    assert main(["census", "gfx1201", "gfx942", "--probe", "s_nop 0"]) == EXIT_INPUT_ERROR
    assert "exactly one target" in capsys.readouterr().err
    assert main(["census", "gfx1201", "--limit", "0"]) == EXIT_INPUT_ERROR
    assert "limit" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
def test_bench_and_roofline_print_their_reports_on_the_host(workspace, capsys):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    quick = ["--max-time-s", "0.5", "--min-reps", "6"]
    assert main(["bench", "--spec", "copy", "--variant", "host", "--target", "host", "--no-adversarial", *quick]) == EXIT_OK
    out = capsys.readouterr().out
    assert "gate seeded: PASS" in out and "bandwidth:" in out and out.rstrip().splitlines()[-1].startswith("copy/host on host")
    assert main(["bench", "--spec", "copy", "--variant", "host", "--target", "host", "--no-adversarial", *quick, "--json"]) == EXIT_OK
    (workspace.root / "copy.json").write_text(capsys.readouterr().out)
    assert main(["roofline", "--target", "host", "--shape", "small", "--ceiling", "copy", "--no-plot", "--max-time-s", "0.5", "--place",
                 "copy.json"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "copy" in out and "MEASURED" in out and out.rstrip().splitlines()[-1].startswith("MEASURED on host CPU")
    placed = next(line for line in out.splitlines() if line.startswith("copy/host"))
    assert "same-size read GB/s" in out and placed.count("%") == 2  # percent of the roof, and of a read of its size


def test_every_command_prints_its_help(capsys):
    from hyperloom.cli.main import build_parser, leaves

    parser = build_parser()
    names = [a for a in parser._subparsers._group_actions[0].choices]  # noqa: SLF001  (argparse keeps no public list)
    assert len(names) >= len({leaf.path[0] for leaf in leaves()})
    for words in [[name] for name in names] + [list(leaf.path) for leaf in leaves()]:
        with pytest.raises(SystemExit) as done:
            main([*words, "--help"])
        assert done.value.code == 0, words
    assert "95 % CI" in capsys.readouterr().out
