"""Issue 18's reproducers, one test each: the workspace boundary holds, user code runs in a worker with a
timeout, and every refusal names the cause and the next step."""

from __future__ import annotations

import os
import shutil
import stat
import time

import pytest

from helpers import REPO
from hyperloom.core.arguments import validate_arguments
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.api import run_allreduce
from hyperloom.tools.allreduce.models import AllreduceRequest
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.catalog import tool
from hyperloom.tools.detect.api import run_detect
from hyperloom.tools.detect.models import DetectRequest
from hyperloom.tools.gate.models import GateRequest
from hyperloom.tools.tune.api import tune_report, tune_start, tune_status
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import SessionRef, TuneRequest

QUICK = {"min_reps": 6, "max_reps": 20, "max_time_s": 0.3}
needs_optuna = pytest.mark.skipif(shutil.which("cc") is None or __import__("importlib").util.find_spec("optuna") is None,
                                  reason="needs cc and optuna")


@pytest.fixture
def copy_spec(workspace):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    return workspace


def _point_reference(workspace, reference: str) -> None:
    spec = workspace.root / "copy" / "kernel.yaml"
    spec.write_text(spec.read_text().replace("reference: reference.py:copy", f"reference: {reference}"))


@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_a_reference_outside_the_workspace_is_refused_and_never_runs(copy_spec, tmp_path, how):
    evil = tmp_path / "outside" / "evil.py"
    evil.parent.mkdir()
    marker = tmp_path / "outside" / "RAN"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\ndef fn(inputs, shape):\n    return {{}}\n")
    _point_reference(copy_spec, f"{evil}:fn" if how == "absolute" else f"{os.path.relpath(evil, copy_spec.root / 'copy')}:fn")
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), copy_spec)
    assert not marker.exists()


def test_a_module_beside_the_reference_that_links_outside_is_refused(copy_spec, tmp_path):
    (tmp_path / "elsewhere.py").write_text("X = 1\n")
    (copy_spec.root / "copy" / "helper.py").symlink_to(tmp_path / "elsewhere.py")
    with pytest.raises(HyperloomError, match="beside the reference.*outside the workspace"):
        run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), copy_spec)


@pytest.mark.parametrize(("body", "reason"), [
    ("    import sys\n    sys.exit(3)\n", "sys.exit(3)"),
    ("    import os\n    os._exit(4)\n", "exited with code 4"),
    ("    raise RuntimeError('nope')\n", "RuntimeError: nope"),
    ("    import time\n    time.sleep(60)\n", "did not finish within 3 s"),
])
def test_a_reference_that_exits_raises_or_hangs_is_an_answer_with_its_reason(copy_spec, body, reason):
    (copy_spec.root / "copy" / "reference.py").write_text("def copy(inputs, shape):\n" + body)
    started = time.perf_counter()
    with pytest.raises(HyperloomError, match=reason.replace("(", r"\(").replace(")", r"\)")) as caught:
        run_bench(BenchRequest(spec="copy", variant="host", target="host", timeout_s=3, **QUICK), copy_spec)
    assert time.perf_counter() - started < 30 and "Next step" in str(caught.value)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_tune_start_reports_a_reference_that_exits_with_its_cause(copy_spec):
    (copy_spec.root / "copy" / "reference.py").write_text("import sys\ndef copy(inputs, shape):\n    sys.exit(3)\n")
    with pytest.raises(HyperloomError, match=r"sys.exit\(3\)"):
        tune_start(TuneRequest(spec="copy", variant="host", target="host", session="x"), copy_spec)


def test_a_session_folder_linked_outside_the_workspace_is_refused(copy_spec, tmp_path):
    outside = tmp_path / "outside_session"
    outside.mkdir()
    (copy_spec.root / ".hyperloom" / "tune").mkdir(parents=True)
    (copy_spec.root / ".hyperloom" / "tune" / "s").symlink_to(outside)
    for call in (tune_report, tune_status):
        with pytest.raises(HyperloomError, match="outside the workspace"):
            call(SessionRef(session="s"), copy_spec)
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_tune(TuneRequest(spec="copy", variant="host", target="host", session="s", background=False), copy_spec)
    assert list(outside.iterdir()) == []


def test_a_dangling_or_empty_linked_session_is_a_clear_error(copy_spec):
    (copy_spec.root / ".hyperloom" / "tune").mkdir(parents=True)
    (copy_spec.root / ".hyperloom" / "tune" / "gone").symlink_to(copy_spec.root / "nowhere")
    with pytest.raises(HyperloomError, match="no tune session 'gone'"):
        tune_status(SessionRef(session="gone"), copy_spec)


@needs_optuna
def test_an_sqlite_storage_outside_the_workspace_is_refused_and_not_created(copy_spec, tmp_path):
    target = tmp_path / "x.db"
    with pytest.raises(HyperloomError, match="outside the workspace"):
        tune_start(TuneRequest(spec="copy", variant="host", target="host", strategy="tpe", storage=f"sqlite:///{target}", session="a"),
                   copy_spec)
    assert not target.exists()


def test_storage_with_a_strategy_that_does_not_use_it_is_refused_before_anything_runs():
    with pytest.raises(HyperloomError, match="only used by the tpe and cmaes"):
        validate_arguments(TuneRequest, {"spec": "copy", "strategy": "grid", "storage": "sqlite:///x.db"})


@needs_optuna
def test_an_unreachable_database_is_refused_when_the_session_starts_not_later(copy_spec):
    pytest.importorskip("psycopg")
    with pytest.raises(HyperloomError, match="storage could not be opened"):
        tune_start(TuneRequest(spec="copy", variant="host", target="host", strategy="tpe", session="pg",
                               storage="postgresql+psycopg://nobody@127.0.0.1:9/none"), copy_spec)


@pytest.mark.parametrize("roof", ["inf", float("inf"), float("nan"), "-inf"])
def test_non_finite_roofs_are_refused(roof):
    with pytest.raises(HyperloomError, match="finite"):
        validate_arguments(TuneRequest, {"spec": "copy", "roof_gbps": roof})


def test_the_command_mode_is_its_own_tool_with_truthful_hints():
    bench, command = tool("bench"), tool("bench_command")
    assert "command" not in bench.request.model_fields and not bench.destructive and not bench.open_world
    assert command.destructive and command.open_world and not command.read_only


def test_unknown_and_misspelled_arguments_are_refused_with_the_closest_valid_name():
    with pytest.raises(HyperloomError, match="unknown argument 'bogus'"):
        validate_arguments(GateRequest, {"candidates": [[1.0]], "references": [[1.0]], "atol": 0, "rtol": 0, "bogus": 1})
    with pytest.raises(HyperloomError, match="did you mean 'max_candidates'"):
        validate_arguments(TuneRequest, {"spec": "x", "max_candidate": 3})


def test_schema_errors_name_the_argument_and_the_next_step_without_echoing_the_input():
    with pytest.raises(HyperloomError) as caught:
        validate_arguments(GateRequest, {"candidates": 5})
    message = str(caught.value)
    assert "candidates" in message and "Next step" in message and "pydantic" not in message
    with pytest.raises(HyperloomError) as huge:
        validate_arguments(GateRequest, {"candidates": ["x" * 1_000_000]})
    assert len(str(huge.value)) < 1000


def test_one_string_where_a_list_of_names_is_taken_is_a_one_item_list():
    from hyperloom.tools.compile.models import CompileRequest

    assert validate_arguments(CompileRequest, {"source": "k.hip", "targets": "gfx1201"}).targets == ["gfx1201"]
    assert validate_arguments(CompileRequest, {"source": "k.hip", "targets": '["gfx1201", "gfx942"]'}).targets == ["gfx1201", "gfx942"]


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_zero_in_a_launch_expression_is_an_error_that_says_where(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    with pytest.raises(HyperloomError, match=r"launch grid 'ceil_div\(n, rows\)' divides by zero"):
        run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, params={"rows": 0}, **QUICK), workspace)


def test_allreduce_bounds_are_exact_integers_and_cover_all_ranks(workspace):
    for arguments in ({"ranks": 2, "shape": [4294967296, 4294967296]}, {"ranks": 2, "shape": [10**30]}, {"ranks": 64, "shape": [67108864]}):
        started = time.perf_counter()
        with pytest.raises(HyperloomError, match="elements"):
            run_allreduce(AllreduceRequest(**arguments), workspace)
        assert time.perf_counter() - started < 2


def test_an_npy_header_claiming_more_than_the_file_holds_is_refused_before_allocation(workspace):
    import numpy as np

    header = np.lib.format.header_data_from_array_1_0(np.ones(4, np.float32)) | {"shape": (1 << 40,)}
    with open(workspace.root / "forged.npy", "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
    with pytest.raises(HyperloomError, match="truncated"):
        run_allreduce(AllreduceRequest(inputs=["forged.npy", "forged.npy"]), workspace)


def test_detect_spends_its_timeout_once_on_a_hanging_vendor_tool(workspace, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake = bin_dir / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\necho x >> {calls}\nsleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    started = time.perf_counter()
    result = run_detect(DetectRequest(timeout_s=1), workspace)
    elapsed = time.perf_counter() - started
    runs = len(calls.read_text().splitlines())
    finding = next(f for f in result.findings if f.layer == "nvidia")
    assert "did not answer within 1 s" in finding.summary
    assert elapsed < runs * 1.0 + 8, f"{elapsed:.1f} s for {runs} timed runs of 1 s"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_the_budget_counts_time_used_not_time_reserved(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "kernels" / "decode")
    report = run_tune(TuneRequest(spec="kernels/decode/w4a16", variant="host", target="host", shape=6, session="b", budget_device_s=6,
                                  background=False, revalidate_pairs=0, sweep_shapes=False, **QUICK), workspace)
    status = report.status
    assert status.recorded > 1, status.stop_reason  # the baseline's reservation (its whole cap) no longer ends the session
    assert (status.spent_device_s <= 6 + 2 and f"{status.spent_device_s:.1f}" in status.stop_reason
            or "max_candidates" in (status.stop_reason or "") or "exhausted" in (status.stop_reason or ""))
