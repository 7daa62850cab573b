"""What `hyperloom` prints for people: CLI flags rather than MCP arguments, targets checked in one place,
verdicts that say why, figures that never round to zero (issue 23, finding 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, copy_kernel, save
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.cli.render.bench import bench_report
from hyperloom.core.evidence import measured
from hyperloom.core.figures import significant
from hyperloom.tools.bench.models import BenchResult

needs_llvm = pytest.mark.skipif(shutil.which("llvm-mc-19") is None or shutil.which("clang-19") is None,
                                reason="LLVM 19 is not installed; .ci/run installs it")


@pytest.fixture
def llvm19(monkeypatch):
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(Path(shutil.which("llvm-mc-19") or "/nonexistent").resolve().parent))


@needs_llvm
def test_the_census_summary_names_cli_flags_and_says_what_the_unreassembled_examples_are(workspace, llvm19, capsys):
    from hyperloom.tools.isa.models import CensusRequest
    from hyperloom.tools.isa.api import run_census
    from hyperloom.tools.isa.summary import LISTING_HINT

    assert main(["census", "gfx1201"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "--detail" in out and "--match dot8" in out and "--offset N" in out and "detail=true" not in out
    assert "examples re-assemble (the other" in out and "instructions are real and stay in the census" in out
    assert run_census(CensusRequest(target="gfx1201"), workspace).summary.endswith(LISTING_HINT)  # the MCP answer keeps its own terms


@needs_llvm
def test_compile_refuses_a_target_the_llvm_does_not_know_as_census_does(workspace, llvm19, capsys):
    copy_kernel(workspace, "dot8.hip")
    assert main(["census", "gfx9999"]) == EXIT_INPUT_ERROR
    census_error = capsys.readouterr().err.strip()
    assert main(["compile", "--source", "dot8.hip", "--target", "gfx9999"]) == EXIT_INPUT_ERROR
    compile_error = capsys.readouterr().err.strip()
    assert compile_error == census_error and "does not know the target 'gfx9999'" in compile_error and "gfx1201" in compile_error
    # features are not part of the name
    assert main(["compile", "--source", "dot8.hip", "--target", "gfx1201:xnack-"]) in (EXIT_OK, EXIT_FAILED_VERDICT)


def test_a_gate_case_whose_shapes_differ_says_so_instead_of_zero_of_zero(workspace, capsys):
    ref = save(workspace, "r.npy", np.zeros(8, np.float32))
    short = save(workspace, "c.npy", np.zeros(7, np.float32))
    wide = save(workspace, "w.npy", np.zeros(8, np.float64))
    assert main(["gate", "check", "--candidate", short, "--reference", ref, "--atol", "0", "--rtol", "0"]) == EXIT_FAILED_VERDICT
    row = capsys.readouterr().out.splitlines()[2]
    assert "FAIL" in row and "shapes differ" in row and "0/0" not in row
    assert main(["gate", "check", "--candidate", wide, "--reference", ref, "--atol", "0", "--rtol", "0"]) == EXIT_FAILED_VERDICT
    row = capsys.readouterr().out.splitlines()[2]
    assert "dtypes differ" in row and "0/0" not in row


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1234.5, "1234"), (12.34, "12.3"), (0.04567, "0.0457"), (0.0004567, "0.000457"), (0.0, "0"), (5.0, "5.00")],
)
def test_a_figure_keeps_three_significant_digits(value, shown):
    assert significant(value) == shown


def test_a_slow_host_kernel_is_not_printed_as_zero_gb_per_second():
    result = BenchResult.model_construct(
        name="copy", variant="host", target="host", backend="c", device="host CPU", shape={"n": 1}, gate=[], kernel=None,
        wall=None, kernel_to_wall=None, bytes_moved=1000, flops=2000, bandwidth_gbps=0.0123, tflops=0.0000246,
        state_before=None, state_after=None, artifacts=None, summary="summary",
        evidence=measured("bench", inputs_sha256="0" * 64, target="host"),
    )
    text = bench_report(result)
    assert "bandwidth: 0.0123 GB/s" in text and "compute: 0.0000246 TFLOP/s" in text


@pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
def test_a_host_bench_summary_gives_its_rate_in_significant_digits(workspace, capsys):
    shutil.copytree(REPO / "kernels" / "microbench" / "fma", workspace.root / "fma")
    quick = ["--max-time-s", "0.2", "--min-reps", "6", "--warmup-s", "0", "--no-flush-cache"]
    assert main(["bench", "--spec", "fma", "--variant", "host", "--target", "host", *quick]) == EXIT_OK
    summary = capsys.readouterr().out.rstrip().splitlines()[-1]
    rate = summary.split(" TFLOP/s")[0].rsplit(", ", 1)[-1]
    assert float(rate) > 0 and len(rate.lstrip("0.")) >= 3, summary  # a CPU's 0.001 TFLOP/s, not 0.00


def test_progress_off_a_terminal_is_one_line_per_step_done_with_its_seconds(capsys, monkeypatch):
    from hyperloom.cli import tool_command

    monkeypatch.setattr(tool_command, "LINE_EVERY_S", 0.0)
    show = tool_command.progress_printer()
    assert show is not None  # pytest's stderr is no terminal: a logged run gets lines
    for done in (1, 2, 3):
        show(done, 3)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" after ")[0] for line in lines] == ["progress: 1/3 (33 %)", "progress: 2/3 (67 %)", "progress: 3/3 (100 %)"]
    assert all(line.endswith(" s") and "\r" not in line for line in lines)
