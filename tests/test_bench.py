"""bench on the host CPU (c backend): gate first, then adaptive timing; hangs and crashes survived."""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from helpers import FIXTURES, REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.bench.api import run_bench_command
from hyperloom.tools.bench.models import BenchCommandRequest, BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.pipeline.stats import summarize
from hyperloom.tools.runtime.sampling import median_ci_halfwidth
from hyperloom.tools.kernelspec.expr import evaluate

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 30, "max_time_s": 1.0, "target_ci": 0.5}


@pytest.fixture
def specs(workspace):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    shutil.copytree(FIXTURES / "specs" / "faults", workspace.root / "faults")
    return workspace


@needs_cc
def test_the_host_copy_passes_every_input_set_then_gets_timed(specs):
    result = run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), specs)
    assert result.ok and result.backend == "c" and [v.input_set for v in result.gate] == ["seeded", "zeros", "extremes", "denormals"]
    assert all(v.passed for v in result.gate) and 6 <= result.kernel.n <= 30
    assert result.bytes_moved == 8 * 1048576 and result.bandwidth_gbps == pytest.approx(result.bytes_moved / result.kernel.median_s / 1e9)
    assert (specs.root / result.artifacts / "samples.json").is_file() and result.evidence.tag.value == "MEASURED"


@needs_cc
def test_a_kernel_that_hangs_is_killed_and_reported_as_timeout(specs):
    started = time.perf_counter()
    result = run_bench(BenchRequest(spec="faults", variant="hang_host", target="host", timeout_s=2.0, **QUICK), specs)
    assert not result.ok and result.gate[0].status == "TIMEOUT" and result.kernel is None
    assert time.perf_counter() - started < 2.0 + 5.0  # the timeout plus the build and the kill


@needs_cc
def test_a_kernel_that_crashes_is_reported_with_its_signal(specs):
    result = run_bench(BenchRequest(spec="faults", variant="oob_host", target="host", **QUICK), specs)
    assert not result.ok and result.gate[0].status == "CRASH" and "SIGSEGV" in result.gate[0].summary
    again = run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), specs)
    assert again.ok  # the loop survives and the next trial runs


@needs_cc
def test_a_wrong_result_has_no_speed(specs):
    (specs.root / "copy" / "copy.c").write_text(
        "void copy_f4(const float* src, float* dst, long long n4) { for (long long i = 0; i < 4 * n4 - 1; ++i) dst[i] = src[i]; }\n"
    )
    result = run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), specs)
    assert not result.ok and result.kernel is None and result.bandwidth_gbps is None
    assert not result.gate[0].passed and "1/1 cases out of tolerance" in result.gate[0].summary


def test_a_command_that_prints_samples_is_benchmarked(workspace):
    script = workspace.root / "timer.py"
    script.write_text('import json\nprint("warming up")\nprint(json.dumps({"samples_s": [0.002, 0.001, 0.0011, 0.0012, 0.001, 0.0013], '
                      '"bytes": 1000000}))\n')
    result = run_bench_command(BenchCommandRequest(command=[sys.executable, "timer.py"], target="host"), workspace)
    assert result.ok and result.kernel.n == 6 and result.kernel.median_s == pytest.approx(0.00115)
    assert result.bandwidth_gbps == pytest.approx(1e6 / 0.00115 / 1e9)


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"spec": "copy", "variant": "nope", "target": "host"}, "no variant"),
        ({"spec": "copy", "variant": "host", "target": "sm_90"}, "does not build for sm_90"),
        ({"spec": "copy", "target": "host"},
         r"first variant 'gpu' \(hip\) does not build for host.*pass variant: host \(CLI: --variant host\)"),
        ({"spec": "copy", "variant": "host", "target": "host", "shape": 9}, "out of range"),
        ({"spec": "../x", "target": "host"}, "outside the workspace"),
    ],
)
def test_bad_requests_are_refused_with_a_next_step(specs, request_fields, message):
    with pytest.raises(HyperloomError, match=message):
        run_bench(BenchRequest(**request_fields), specs)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["definitely-not-a-program"], "was not found"),
        ([sys.executable, "-c", "print(1)"], "without a JSON result line"),
        (["/etc/passwd"], "cannot be run"),
        (["."], "cannot be run"),
        ([sys.executable, "-c", "print('{\"samples_s\": [NaN, 1]}')"], "not a positive finite number"),
        ([sys.executable, "-c", "print('{\"samples_s\": [1e-3], \"bytes\": -5}')"], "not a count"),
        ([sys.executable, "-c", "import time; time.sleep(30)"], "was killed"),
    ],
)
def test_a_command_that_cannot_be_timed_is_refused_with_its_reason(workspace, command, message):
    with pytest.raises(HyperloomError, match=message):
        run_bench_command(BenchCommandRequest(command=command, timeout_s=2), workspace)


@pytest.mark.parametrize("command", [[], [""], ["a\x00b"]])
def test_an_empty_or_malformed_command_is_refused_before_anything_runs(command):
    from hyperloom.core.arguments import validate_arguments

    with pytest.raises(HyperloomError, match="command"):
        validate_arguments(BenchCommandRequest, {"command": command})


def test_a_spec_with_a_broken_expression_is_refused_before_any_launch(specs):
    spec = specs.root / "copy" / "kernel.yaml"
    spec.write_text(spec.read_text().replace("value: n // 4", "value: n // m"))
    with pytest.raises(HyperloomError, match="uses 'm', which the shape does not define"):
        run_bench(BenchRequest(spec="copy", variant="host", target="host", **QUICK), specs)


@pytest.mark.parametrize("text", ["__import__('os').system('x')", "n.__class__", "(lambda: 1)()", "open('x')", "[n]"])
def test_expressions_cannot_reach_beyond_arithmetic(text):
    with pytest.raises(HyperloomError):
        evaluate(text, {"n": 4})


@pytest.mark.parametrize(("text", "value"),
                         [("ceil_div(n, 3)", 2), ("round_up(n, 8)", 8), ("2 * n ** 2", 32), ("min(n, 2) + max(1, 3)", 5), ("log2(n)", 2)])
def test_expressions_evaluate_over_the_shape(text, value):
    assert evaluate(text, {"n": 4}) == value


def test_the_median_interval_narrows_with_more_samples():
    noisy = [1.0 + 0.01 * ((i * 7919) % 13 - 6) for i in range(400)]  # evenly spread over ±6 %
    assert median_ci_halfwidth(noisy[:10]) > median_ci_halfwidth(noisy) and median_ci_halfwidth(noisy) <= 0.0100001
    assert median_ci_halfwidth([1.0] * 5) == float("inf")


def test_summaries_count_outliers_and_spread():
    s = summarize([1.0] * 20 + [10.0])
    assert (s.median_s, s.min_s, s.p90_s, s.outliers, s.n) == (1.0, 1.0, 1.0, 1, 21)
    assert s.cv == pytest.approx(s.std_s / s.mean_s) and s.cv > 0


def test_rocm_smi_clocks_temperature_and_power_are_read_from_its_real_output():
    from hyperloom.tools.smi.amd import rocm_smi_state

    state = rocm_smi_state((FIXTURES / "bench" / "rocm-smi-a.navi10.txt").read_text(), 0)
    assert (state.tool, state.sm_clock_mhz, state.memory_clock_mhz, state.temperature_c) == ("rocm-smi", 2100.0, 100.0, 67.0)
    assert state.power_w is None  # that capture has no power line
    assert rocm_smi_state((FIXTURES / "bench" / "rocm-smi-a.navi10.txt").read_text(), 3).note == "no reading for GPU 3"


@needs_cc
def test_a_read_flush_is_chosen_recorded_and_timed_on_the_host(specs):
    result = run_bench(BenchRequest(spec="copy", variant="host", target="host", flush_mode="read", adversarial=False, **QUICK), specs)
    assert result.ok and result.flush_mode == "read" and result.flush_bytes >= 2 * result.cache_bytes > 0


@pytest.mark.parametrize("target", ["sm_90", "gfx1201", "gfx942"])
def test_the_timing_helpers_build_for_nvidia_and_amd(workspace, target):
    from hyperloom.tools.pipeline.build import timing_kernels

    needed = "nvcc" if target.startswith("sm_") else "clang-19"
    if shutil.which(needed) is None:
        pytest.skip(f"{needed} is not installed")
    code_object = workspace.root / timing_kernels(target, workspace)
    assert code_object.is_file() and code_object.stat().st_size > 0
    assert timing_kernels(target, workspace) == str(code_object.relative_to(workspace.root))  # cached: the same build again


@needs_cc
def test_a_scratch_buffer_is_zeroed_never_drawn_and_never_gated(workspace):
    from hyperloom.tools.kernelspec.load import draw_inputs, load_spec, output_buffers

    shutil.copytree(FIXTURES / "specs" / "scratch", workspace.root / "scratch")
    spec = load_spec(workspace.root / "scratch", workspace).spec
    assert set(draw_inputs(spec, spec.shapes[0], "ones")) == {"x"} and [a.name for a in output_buffers(spec)] == ["y"]
    result = run_bench(BenchRequest(spec="scratch", target="host", **QUICK), workspace)
    assert result.ok and [v.input_set for v in result.gate] == ["seeded", "zeros", "ones"], result.summary


@needs_cc
def test_every_trial_starts_from_zeroed_scratch_even_after_a_kernel_left_it_dirty(workspace):
    from hyperloom.tools.pipeline.build import build_with
    from hyperloom.tools.pipeline.trial import check_input_set, stage_input_set
    from hyperloom.tools.pipeline.launch import prepare
    from hyperloom.tools.kernelspec.load import load_spec

    shutil.copytree(FIXTURES / "specs" / "scratch", workspace.root / "scratch")
    launchable, build = build_with(prepare(load_spec(workspace.root / "scratch", workspace), None, "host", 0), workspace, {"LEAK": 1})
    folder = workspace.root / "run"
    stage_input_set(launchable, "seeded", folder)
    for _ in range(2):  # LEAK leaves calls[0] at 1: a second trial passes only if its scratch is zeroed again
        assert check_input_set(launchable, build.code_object, "seeded", folder, folder, workspace, timeout_s=30, device=None).passed


def test_a_gpu_launch_uploads_inputs_poisons_outputs_and_zeroes_scratch(tmp_path):
    """gpu.upload against a stand-in driver that records its calls (the real one needs a GPU: tests/test_gpu.py)."""
    import numpy as np

    from hyperloom.tools.runtime.gpu import POISON_BYTE, upload
    from hyperloom.tools.runtime.models import ArgSpec

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def malloc(self, nbytes: int) -> int:
            return 4096 * (len(self.calls) + 1)

        def htod(self, pointer: int, address: int, nbytes: int) -> None:
            self.calls.append(("htod", pointer, nbytes))

        def memset(self, pointer: int, byte: int, nbytes: int) -> None:
            self.calls.append(("memset", pointer, byte, nbytes))

    np.save(tmp_path / "in_x.npy", np.arange(4, dtype=np.float32))
    args = [ArgSpec(name="x", kind="buffer", dtype="float32", nbytes=16, role="input", input_path=str(tmp_path / "in_x.npy"), shape=[4]),
            ArgSpec(name="y", kind="buffer", dtype="float32", nbytes=16, role="output", shape=[4]),
            ArgSpec(name="counters", kind="buffer", dtype="uint32", nbytes=8, role="scratch", shape=[2]),
            ArgSpec(name="n", kind="scalar", dtype="int32", value=4)]
    driver = Recorder()
    buffers, _ = upload(driver, args)
    assert [call[0] for call in driver.calls] == ["htod", "memset", "memset"] and list(buffers) == ["x", "y", "counters"]
    assert driver.calls[1][2:] == (POISON_BYTE, 16) and driver.calls[2][2:] == (0, 8)
