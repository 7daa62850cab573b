"""Triton kernels in kernel.yaml (issue 19), on the CPU: loading and binding, autotune configs as the tuning
space, the interpreter gate (a right kernel passes, a wrong one is rejected), offline AMD builds with resource
usage and a disasm rule, and each kind of bad input as one clear error."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.launch import prepare
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.runtime.models import ArgSpec
from hyperloom.tools.spec.models import SpecCheckRequest
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.kernelspec.models import BufferArg, ScalarArg
from hyperloom.tools.triton import loader
from hyperloom.tools.triton.constexprs import bind, expand_autotune
from hyperloom.tools.triton.launch import TritonLaunch
from hyperloom.tools.triton.models import AutotuneConfig, KernelInfo, KernelParam
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest

HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (pip install 'hyperloom[triton]')")
needs_interpreter = pytest.mark.skipif(not (HAS_TRITON and HAS_TORCH), reason="Triton's interpreter needs triton and torch")
EXAMPLE = REPO / "kernels" / "triton" / "softmax"


@pytest.fixture
def softmax(workspace: Workspace) -> Path:
    shutil.copytree(EXAMPLE, workspace.root / "softmax", ignore=shutil.ignore_patterns("__pycache__"))
    return workspace.root / "softmax"


def _edit_spec(folder: Path, change) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((folder / "kernel.yaml").read_text())
    change(spec)
    (folder / "kernel.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def _kernel(folder: Path, text: str) -> None:
    (folder / "softmax.py").write_text(text)


def _info(*params: tuple[str, bool], autotune: list[AutotuneConfig] | None = None, heuristics: list[str] | None = None,
          defaults: dict[str, int] | None = None) -> KernelInfo:
    defaults = defaults or {}
    return KernelInfo(entry="k", def_line=1, triton_version="test", autotune=autotune, heuristics=heuristics or [],
                      params=[KernelParam(name=n, constexpr=c, has_default=n in defaults, default=defaults.get(n)) for n, c in params])


ARGS = [BufferArg(kind="buffer", name="x", dtype="float32", shape=["n"], role="input"),
        BufferArg(kind="buffer", name="y", dtype="float32", shape=["n"], role="output"),
        ScalarArg(kind="scalar", name="n", dtype="int32", value="n")]


# --- binding (pure) ---------------------------------------------------------------------------------------------

def test_a_constexpr_takes_a_define_then_a_shape_variable_then_its_default():
    info = _info(("x", False), ("y", False), ("n", False), ("BLOCK", True), ("ROWS", True), ("EVEN", True), defaults={"EVEN": 0})
    binding = bind(info, ARGS, {"BLOCK": "256", "num_warps": 8}, {"n": 1000, "ROWS": 4, "BLOCK": 64})
    assert binding.constexprs == {"BLOCK": 256, "ROWS": 4, "EVEN": 0}
    assert binding.options == {"num_warps": 8}


def test_a_constexpr_with_no_value_is_one_error_naming_where_values_come_from():
    info = _info(("x", False), ("y", False), ("n", False), ("BLOCK", True))
    with pytest.raises(HyperloomError, match="constexpr BLOCK of k has no value") as caught:
        bind(info, ARGS, {}, {"n": 8})
    assert "defines: {BLOCK" in caught.value.next_step


def test_a_heuristic_constexpr_is_left_to_the_worker_and_a_define_overrides_it():
    info = _info(("x", False), ("y", False), ("n", False), ("BLOCK", True), heuristics=["BLOCK"])
    assert bind(info, ARGS, {}, {"n": 8}).heuristics == ["BLOCK"]
    assert bind(info, ARGS, {"BLOCK": 32}, {"n": 8}).constexprs == {"BLOCK": 32}


@pytest.mark.parametrize(("names", "says"), [
    (["x", "y"], "missing ['n']"),
    (["y", "x", "n"], "the order differs"),
    (["x", "y", "n", "BLOCK"], "['BLOCK'] are constexprs"),
])
def test_args_that_are_not_the_kernels_runtime_parameters_in_order_are_refused(names, says):
    info = _info(("x", False), ("y", False), ("n", False), ("BLOCK", True))
    by_name = {a.name: a for a in ARGS} | {"BLOCK": ScalarArg(kind="scalar", name="BLOCK", dtype="int32", value=4)}
    with pytest.raises(HyperloomError, match="do not match") as caught:
        bind(info, [by_name[n] for n in names], {"BLOCK": 4}, {"n": 8})
    assert says in caught.value.cause


def test_a_define_that_is_neither_a_constexpr_nor_an_option_is_refused():
    info = _info(("x", False), ("y", False), ("n", False), ("BLOCK", True))
    with pytest.raises(HyperloomError, match=r"defines \['BLOKC'\]"):
        bind(info, ARGS, {"BLOCK": 4, "BLOKC": 4}, {"n": 8})


@pytest.mark.parametrize(("option", "value"), [("num_warps", 3), ("num_ctas", 2), ("num_stages", "many")])
def test_launch_options_the_runtime_cannot_honour_are_refused(option, value):
    info = _info(("x", False), ("y", False), ("n", False))
    with pytest.raises(HyperloomError, match=option):
        bind(info, ARGS, {option: value}, {"n": 8})


def test_autotune_config_stands_for_its_configs_values_and_explicit_params_win():
    configs = [AutotuneConfig(kwargs={"BLOCK": 128}, num_warps=4, num_stages=3),
               AutotuneConfig(kwargs={"BLOCK": 512}, num_warps=8, num_stages=2)]
    info = _info(("x", False), ("BLOCK", True), autotune=configs)
    assert expand_autotune({"autotune_config": 1}, {}, info) == {"BLOCK": 512, "num_warps": 8, "num_stages": 2}
    assert expand_autotune({"autotune_config": "0", "num_stages": 5}, {}, info) == {"BLOCK": 128, "num_warps": 4, "num_stages": 5}
    assert expand_autotune({}, {"autotune_config": 1}, info)["BLOCK"] == 512  # a variant's baseline may name one
    with pytest.raises(HyperloomError, match="not an index"):
        expand_autotune({"autotune_config": 2}, {}, info)


def test_the_launch_drops_arguments_triton_made_constant_and_appends_its_scratch_pointers():
    specs = [ArgSpec(name="a", kind="buffer", dtype="float32", nbytes=64, role="input"),
             ArgSpec(name="stride", kind="scalar", dtype="int64", value=1),
             ArgSpec(name="n", kind="scalar", dtype="int64", value=4096)]
    launched = TritonLaunch(kept=(("a", "*fp32"), ("n", "i32")), scratch_bytes_per_program=(16, 0)).arg_specs(specs, [4, 2])
    assert [(s.name, s.dtype) for s in launched] == [("a", "float32"), ("n", "int32"), ("triton_global_scratch", "uint8"),
                                                     ("triton_profile_scratch", "uint8")]
    assert [s.nbytes for s in launched[2:]] == [16 * 8, 0] and launched[2].role == "scratch"


def test_a_missing_triton_package_is_one_error_naming_the_extra(monkeypatch):
    monkeypatch.setattr(loader.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HyperloomError, match="need the triton package") as caught:
        loader.triton_version()
    assert "hyperloom[triton]" in caught.value.next_step


# --- the kernel file, read in a worker -------------------------------------------------------------------------

@needs_triton
def test_the_example_entry_is_read_through_its_autotune_wrapper(workspace, softmax):
    info = loader.describe_kernel(softmax / "softmax.py", "softmax_kernel", workspace)
    assert info.runtime == ["x", "y", "n_cols"] and [p.name for p in info.constexprs] == ["BLOCK"]
    assert [c.params() for c in info.autotune or []][:2] == [{"BLOCK": 256, "num_warps": 4, "num_stages": 3},
                                                             {"BLOCK": 256, "num_warps": 8, "num_stages": 3}]
    assert info.autotune_key == ["n_cols"]


@needs_triton
def test_a_kernel_file_that_fails_to_import_is_reported_with_its_line(workspace, softmax):
    _kernel(softmax, "import triton\n\nraise RuntimeError('no GPU config here')\n")
    with pytest.raises(HyperloomError, match=r"softmax.py fails to import: RuntimeError: no GPU config here at softmax.py:3"):
        loader.describe_kernel(softmax / "softmax.py", "softmax_kernel", workspace)


@needs_triton
def test_an_entry_that_is_not_a_jit_function_is_refused_with_what_the_file_has(workspace, softmax):
    text = (EXAMPLE / "softmax.py").read_text() + "\n\ndef launch(x):\n    return x\n"
    _kernel(softmax, text)
    with pytest.raises(HyperloomError, match="'launch' is a plain Python function, not a @triton.jit function"):
        loader.describe_kernel(softmax / "softmax.py", "launch", workspace)
    with pytest.raises(HyperloomError, match=r"has no 'softmax' \(its @triton.jit functions: softmax_kernel\)"):
        loader.describe_kernel(softmax / "softmax.py", "softmax", workspace)


@needs_triton
def test_spec_check_offers_the_kernels_own_autotune_list_as_the_tuning_space(workspace, softmax):
    _edit_spec(softmax, lambda s: s.pop("tuning"))
    result = run_spec_check(SpecCheckRequest(spec="softmax", run_reference=False), workspace)
    offer = next(p for p in result.problems if p.path == "tuning")
    assert offer.severity == "warning" and "6 @triton.autotune configs" in offer.cause
    assert "tuning: {autotune_config: [0, 1, 2, 3, 4, 5]}" in offer.next_step and "5: BLOCK=4096, num_warps=8" in offer.next_step


@needs_triton
def test_spec_check_finds_a_constexpr_with_no_value_and_an_autotune_index_out_of_range(workspace, softmax):
    def change(spec):  # type: ignore[no-untyped-def]
        spec["variants"]["triton"]["defines"] = {"num_warps": 4}
        spec["tuning"] = {"autotune_config": [0, 9]}
    _edit_spec(softmax, change)
    result = run_spec_check(SpecCheckRequest(spec="softmax", run_reference=False), workspace)
    found = {(p.path, p.severity): p.cause for p in result.problems}
    assert "constexpr BLOCK of softmax_kernel has no value" in found[("variants.triton.defines", "error")]
    assert "[9] are not indices" in found[("tuning.autotune_config", "error")]
    assert not result.ok


# --- the interpreter gate on the CPU ---------------------------------------------------------------------------

@needs_interpreter
def test_the_interpreter_gates_the_example_on_every_input_set_and_reports_no_speed(workspace, softmax):
    result = run_bench(BenchRequest(spec="softmax", target="host", shape=0), workspace)
    assert [v.input_set for v in result.gate] == ["seeded", "zeros", "ones", "extremes"]
    assert all(v.passed for v in result.gate), [v.summary for v in result.gate]
    assert result.backend == "triton_interpreter" and not result.ok and result.kernel is None
    assert "its times are not kernel times" in result.summary


@needs_interpreter
def test_the_interpreter_gate_rejects_a_wrong_kernel(workspace, softmax):
    text = (EXAMPLE / "softmax.py").read_text()
    assert "/ row_sum" in text
    _kernel(softmax, text.replace("/ row_sum", "/ (row_sum * 1.01)"))
    result = run_bench(BenchRequest(spec="softmax", target="host", shape=0, adversarial=False), workspace)
    assert [v.passed for v in result.gate] == [False] and "FAIL" in result.gate[0].summary


@needs_interpreter
def test_a_heuristics_constexpr_is_computed_as_triton_would(workspace, softmax):
    text = (EXAMPLE / "softmax.py").read_text().replace(
        '@triton.jit\ndef softmax_kernel',
        '@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"]) // 4})\n@triton.jit\ndef softmax_kernel')
    _kernel(softmax, text)
    _edit_spec(softmax, lambda s: s["variants"]["triton"].update(defines={"num_warps": 4}))
    result = run_bench(BenchRequest(spec="softmax", target="host", shape=0, adversarial=False), workspace)
    assert result.gate[0].passed, result.gate[0].summary


def test_tune_refuses_the_interpreter_because_its_times_are_not_kernel_times(workspace, softmax):
    pytest.importorskip("triton")
    from hyperloom.tools.tune.loop import run_tune
    from hyperloom.tools.tune.models import TuneRequest

    with pytest.raises(HyperloomError, match="Triton's interpreter, whose times are not kernel times"):
        run_tune(TuneRequest(spec="softmax", target="host", max_candidates=2), workspace)


# --- offline builds -------------------------------------------------------------------------------------------

@needs_triton
@pytest.mark.parametrize(("target", "wave"), [("gfx942", 64), ("gfx1201", 32)])
def test_the_example_builds_offline_for_amd_with_resource_usage_and_passes_a_disasm_rule(workspace, softmax, target, wave):
    loaded = load_spec(softmax, workspace)
    launchable, build = build_with(prepare(loaded, None, target, 1), workspace, {"autotune_config": 3})
    assert build.ok, build.summary
    kernel = build.kernels[0]
    assert kernel.name == "softmax_kernel" and kernel.wavefront_size == wave and kernel.vgprs and kernel.vgpr_spills == 0
    assert launchable.block == [8 * wave] and launchable.symbol == "softmax_kernel"  # autotune config 3: BLOCK 1024, 8 warps
    assert [name for name, _ in launchable.parameters.kept] == ["x", "y", "n_cols"]
    checked = verify(VerifyRequest(code_object=build.code_object, expect=["v_exp_f32*"], forbid=["@scratch"]), workspace)
    assert checked.passed, checked.summary
    again = build_with(prepare(loaded, None, target, 1), workspace, {"autotune_config": 3})[1]
    assert again.cache_hit and again.code_object == build.code_object


@needs_triton
def test_a_triton_compile_error_is_a_failed_build_that_names_the_kernel_files_line(workspace, softmax):
    text = (EXAMPLE / "softmax.py").read_text()
    broken = text.replace("    row_max = tl.max(running_max, 0)", "    row_max = tl.no_such_op(running_max, 0)")
    _kernel(softmax, broken)
    line = broken.splitlines().index("    row_max = tl.no_such_op(running_max, 0)") + 1
    build = build_with(prepare(load_spec(softmax, workspace), None, "gfx942", 0), workspace, {})[1]
    assert not build.ok and f"softmax.py:{line}" in build.summary and "no_such_op" in build.summary
    assert build.diagnostics[0].line == line


@needs_triton
def test_a_grid_that_is_not_positive_is_refused_before_any_build(workspace, softmax):
    _edit_spec(softmax, lambda s: s["launch"].update(grid=["rows // 16"]))
    with pytest.raises(HyperloomError, match=r"launch grid \[0\].*not positive"):
        build_with(prepare(load_spec(softmax, workspace), None, "gfx942", 0), workspace, {})


@needs_triton
def test_an_argument_equal_to_one_is_compiled_away_as_triton_does_and_not_passed(workspace, softmax):
    text = (EXAMPLE / "softmax.py").read_text().replace("def softmax_kernel(x, y, n_cols, BLOCK",
                                                        "def softmax_kernel(x, y, n_cols, unit, BLOCK")
    _kernel(softmax, text)
    _edit_spec(softmax, lambda s: s["args"].append({"kind": "scalar", "name": "unit", "dtype": "int64", "value": 1}))
    launchable, build = build_with(prepare(load_spec(softmax, workspace), None, "gfx942", 1), workspace, {})
    assert build.ok, build.summary
    assert [name for name, _ in launchable.parameters.kept] == ["x", "y", "n_cols"]


# --- the kernel's own autotune choice beside the winner ------------------------------------------------------------

@needs_triton
def test_the_autotune_choice_is_not_guessed_where_no_gpu_can_time_it(workspace, softmax):
    from hyperloom.tools.triton.autotune import autotune_choice

    launchable = prepare(load_spec(softmax, workspace), None, "host", 0)
    choice = autotune_choice(launchable, workspace.root, workspace, None)
    assert not choice.determined and "on a GPU" in choice.reason and choice.params == {}


def test_the_report_puts_the_autotune_choice_beside_the_winner_with_its_ratio():
    from hyperloom.tools.tune.seeds import choice_in, render
    from hyperloom.tools.triton.models import AutotuneChoice
    from hyperloom.tools.tune.models import TrialRecord

    def trial(seq: int, digest: str, median_s: float) -> TrialRecord:
        return TrialRecord(seq=seq, hash=digest, params={"autotune_config": seq}, proposer="grid", status="PASSED", reason="",
                           input_set=None,
                           median_s=median_s, bandwidth_gbps=None, tflops=None, roof_pct=None, speedup=None, device="gpu 0", worker=0,
                           device_s=1.0, compile_s=0.1, finished_at="2026-11-30T00:00:00+00:00")

    class Ledger:
        def own_tuner_choice(self) -> AutotuneChoice | None:
            return AutotuneChoice(determined=True, reason="Triton's autotuner on H200", config_index=2, config="BLOCK=1024, num_warps=4",
                                  params={"autotune_config": 2}, hash="b")

    choice = choice_in(Ledger(), [trial(1, "a", 10e-6), trial(2, "b", 12e-6)])  # type: ignore[arg-type]
    assert choice is not None and choice.median_s == 12e-6 and choice.winner_speedup == pytest.approx(1.2)
    text = "\n".join(render(choice))
    assert "Config 2 (`BLOCK=1024, num_warps=4`)" in text and "12.00 us as Hyperloom timed it" in text and "1.200x faster" in text
    assert "Not determined: no GPU." in "\n".join(render(AutotuneChoice(determined=False, reason="no GPU")))


@needs_triton
def test_the_trial_a_triton_kernel_sends_to_the_cuda_runtime_is_the_compiled_kernels_launch(workspace, softmax):
    from hyperloom.tools.pipeline.trial import check_input_set
    from hyperloom.tools.runtime.models import TrialRequest, TrialResult

    sent: list[TrialRequest] = []

    def runner(request: TrialRequest, timeout_s: float, device: int | None = None) -> TrialResult:
        sent.append(request)
        return TrialResult(status="CRASH", message="no GPU here")

    launchable, build = build_with(prepare(load_spec(softmax, workspace), None, "sm_90", 1), workspace, {"autotune_config": 5})
    check_input_set(launchable, build.code_object, "seeded", workspace.root, workspace.root / "out", workspace, timeout_s=1, device=None,
                    runner=runner)
    request = sent[0]
    assert request.backend == "cuda" and request.entry == "softmax_kernel" and request.code_object.endswith(".cubin")
    assert request.grid == [4096] and request.block == [8 * 32] and request.shared_bytes == launchable.shared_bytes > 0
    assert [(a.name, a.kind, a.role) for a in request.args][:3] == [("x", "buffer", "input"), ("y", "buffer", "output"),
                                                                    ("n_cols", "scalar", "scalar")]
    assert [a.role for a in request.args[3:]] == ["scratch"] * len(launchable.parameters.scratch_bytes_per_program)
