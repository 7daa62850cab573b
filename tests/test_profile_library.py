"""The fusion library matcher (issue 31, item 3) on real traces: the H200 Llama capture's eager RMSNorm chains (with and
without the residual add) and its gated MLP map to the library's kernels with every argument traced to the chain; a
chain that departs from a pattern anywhere (an op more or less, another exponent, axis, weight or dtype) is refused."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from helpers import REPO
from hyperloom.core.evidence import Tag
from hyperloom.tools.profile.analyse import analyse
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.fusion import chains
from hyperloom.tools.profile.group import Classifier
from hyperloom.tools.profile.library import Step, match_chain, step_of
from hyperloom.tools.profile.load import read_trace
from hyperloom.tools.profile.models import FusionCandidate, ProfileRequest
from hyperloom.tools.profile.roof import from_datasheet
from hyperloom.tools.profile.tensors import Tensor
from hyperloom.tools.profile.work import WorkCache

PROFILE = REPO / "tests" / "fixtures" / "profile"
H200_LLAMA = PROFILE / "h200_llama_trace.json.gz"  # lab/device-runs/profile_llama.py on the lent H200
CPU_DECODER = PROFILE / "cpu_decoder_trace.json"  # capture_cpu_decoder.py: HF's Qwen2RMSNorm and Qwen2MLP on a CPU thread


@pytest.fixture(scope="module")
def h200() -> list[FusionCandidate]:
    return analyse(read_trace(H200_LLAMA, "h200"), from_datasheet("NVIDIA H200")).fusion


def _one(candidates: list[FusionCandidate], ops: list[str], first_shape: str) -> FusionCandidate:
    found = [c for c in candidates if [o.split("::")[-1] for o in c.ops] == ops and c.shapes[0] == first_shape]
    assert len(found) == 1, [(c.ops, c.shapes[0]) for c in candidates]
    return found[0]


RMS = ["copy_", "pow", "mean", "add", "rsqrt", "mul", "copy_", "mul"]


def test_the_h200_residual_add_and_rmsnorm_chain_is_the_librarys_add_rmsnorm_with_its_arguments_traced(h200):
    chain = _one(h200, ["add", *RMS], "[1, 512, 2048] bfloat16")
    assert chain.occurrences == 32 and chain.library is not None, chain.library_note
    m = chain.library
    assert (m.kernel, m.spec_folder, m.entry, m.dtype, m.shape) == ("add_rmsnorm", "kernels/triton/add_rmsnorm", "add_rmsnorm_kernel",
                                                                    "bfloat16", {"rows": 512, "cols": 2048})
    assert (REPO / m.spec_folder / "kernel.yaml").is_file() and (REPO / m.spec_folder / m.launcher.split(":")[0]).is_file()
    args = {a.name: a for a in m.args}
    assert list(args) == ["x", "residual", "weight", "y", "n_cols", "eps"]  # the spec's arguments, in its order
    assert (args["x"].dims, args["x"].dtype, args["residual"].dims) == ([1, 512, 2048], "bfloat16", [1, 512, 2048])
    assert args["weight"].dims == [2048] and "op 9 aten::mul" in args["weight"].source
    assert args["n_cols"].value == 2048 and args["n_cols"].tag is Tag.MEASURED
    assert args["eps"].tag is Tag.ASSUMED and "not recorded" in args["eps"].source  # the trace records no Python float
    assert any("bfloat16" in n and "float32" in n for n in m.notes)  # the spec gates float32 until bfloat16 is a spec dtype


def test_the_h200_first_layers_norm_with_no_add_before_it_is_the_plain_rmsnorm(h200):
    m = _one(h200, RMS, "[1, 512, 2048] float32").library
    assert m is not None and m.kernel == "rmsnorm" and m.shape == {"rows": 512, "cols": 2048}
    assert [(a.name, a.dims, a.dtype) for a in m.args[:3]] == [("x", [1, 512, 2048], "bfloat16"), ("weight", [2048], "bfloat16"),
                                                               ("y", [1, 512, 2048], "bfloat16")]


def test_the_h200_gated_mlp_steps_over_the_up_projection_and_is_silu_and_mul(h200):
    chain = _one(h200, ["silu", "mul"], "[1, 512, 8192] bfloat16")
    assert chain.steps_over == ["aten::mm"] and chain.before == chain.after == "aten::mm"
    assert chain.bytes_saved_per_occurrence == 2 * 512 * 8192 * 2  # silu's output, written and read back
    m = chain.library
    assert m is not None and m.kernel == "silu_and_mul" and m.shape == {"rows": 512, "d": 8192}
    assert m.args[0].name == "x" and m.args[0].dims == [512, 2 * 8192] and "silu_mul(gate, up)" in m.args[0].source
    assert _one(h200, ["silu", "mul"], "[1, 1, 8192] bfloat16").library.shape == {"rows": 1, "d": 8192}  # the decode steps


def test_a_chain_the_trace_cuts_short_is_refused_as_a_near_miss_and_the_rotary_products_match_nothing(h200):
    cut = _one(h200, ["add", "copy_", "pow", "mean", "add", "rsqrt"], "[1, 1, 2048] bfloat16")
    assert cut.library is None and "add_rmsnorm" in cut.library_note and "ends where mul would follow" in cut.library_note
    rotary = _one(h200, ["mul", "add"], "[1, 32, 512, 64] bfloat16")  # q * cos + rotate_half(q) * sin: cat and neg break the chain
    assert rotary.library is None and rotary.library_note is None


# --- near misses, edited from the real chain ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def add_rms_steps() -> list[Step]:
    trace = read_trace(H200_LLAMA, "h200")
    for chain in chains(trace, Classifier(), WorkCache()):
        if [n.op.name.split("::")[-1] for n in chain.run] == ["add", *RMS] and chain.run[0].work.output.dims == (1, 512, 2048):
            return [step_of(i, n.op, n.work.reads, n.work.output) for i, n in enumerate(chain.run, start=1)]
    raise AssertionError("the H200 fixture has no add + RMSNorm chain")


def _edit(steps: list[Step], position: int, **change) -> list[Step]:  # type: ignore[no-untyped-def]
    return [replace(s, **change) if s.position == position else s for s in steps]


def _scalars(step: Step, index: int, text: str) -> tuple[str | None, ...]:
    values = list(step.scalars)
    values[index] = text
    return tuple(values)


def test_the_unedited_steps_match_so_each_edit_below_is_what_refuses(add_rms_steps):
    assert match_chain(add_rms_steps)[0].kernel == "add_rmsnorm"
    assert match_chain(add_rms_steps[1:])[0].kernel == "rmsnorm"


@pytest.mark.parametrize(("edit", "says"), [
    (lambda s: _edit(s, 3, scalars=_scalars(s[2], 1, "3")), "raises to the power 3, not 2"),
    (lambda s: _edit(s, 4, scalars=_scalars(s[3], 1, "[1]")), "averages over [1]"),
    (lambda s: _edit(s, 4, scalars=_scalars(s[3], 2, "False")), "keepdim False"),
    (lambda s: _edit(s, 9, reads=(s[8].reads[1], s[8].reads[1])), "not the normalized row by a weight of [2048]"),
    (lambda s: _edit(s, 8, output=s[7].output.like(dtype="c10::Half")), "converts to float16, not back to the input's bfloat16"),
    (lambda s: _edit(s, 1, scalars=_scalars(s[0], 2, "2")), "alpha=2"),
    (lambda s: [*s, replace(s[-1], position=10)], "the chain goes on after the pattern (aten::mul)"),
    (lambda s: s[:5] + s[6:], "op 7 aten::mul is mul where the pattern has rsqrt"),
])
def test_a_chain_that_departs_from_the_pattern_anywhere_is_refused_with_the_reason(add_rms_steps, edit, says):
    found, note = match_chain(edit(add_rms_steps))
    assert found is None and says in note and "add_rmsnorm" in note


def test_a_float32_model_without_conversions_matches_but_a_bfloat16_one_that_skips_them_is_refused(add_rms_steps):
    def model_in(dtype: str) -> list[Step]:
        def cast(t: Tensor) -> Tensor:
            return t.like(dtype=dtype) if t.dims else t  # the eps (a 0-dim double) stays

        return [replace(s, reads=tuple(map(cast, s.reads)), output=cast(s.output)) for s in add_rms_steps if s.op != "copy_"]

    found, _ = match_chain(model_in("float"))
    assert found is not None and found.kernel == "add_rmsnorm" and found.dtype == "float32" and not found.notes
    assert match_chain(model_in("c10::BFloat16")) == (None, None)  # HF's norm squares in float32: a bfloat16 pow is another module


def test_gelu_with_the_tanh_form_is_refused_by_the_exact_gelu_spec(h200):
    trace = read_trace(H200_LLAMA, "h200")
    run = next(c.run for c in chains(trace, Classifier(), WorkCache()) if c.run[0].op.name == "aten::silu")
    steps = [step_of(i, n.op, n.work.reads, n.work.output) for i, n in enumerate(run, start=1)]
    gelu = [replace(steps[0], name="aten::gelu", op="gelu"), steps[1]]
    assert match_chain(gelu)[0].kernel == "gelu_and_mul"
    tanh = [replace(gelu[0], scalars=("", "tanh")), gelu[1]]
    found, note = match_chain(tanh)
    assert found is None and "approximate='tanh'" in note


# --- a CPU thread's chain, and the files -----------------------------------------------------------------------------

def test_the_cpu_threads_chain_of_aten_to_ops_matches_too():
    fusion = analyse(read_trace(CPU_DECODER, "cpu"), from_datasheet(None)).fusion
    matched = {(c.library.kernel, c.shapes[0]) for c in fusion if c.library}
    assert matched == {("add_rmsnorm", "[1, 12, 96] bfloat16"), ("rmsnorm", "[1, 12, 96] float32"),
                       ("silu_and_mul", "[1, 12, 160] bfloat16")}
    assert any(c.ops[1] == "aten::to" for c in fusion if c.library and c.library.kernel == "add_rmsnorm")
    silu = next(c for c in fusion if c.library and c.library.kernel == "silu_and_mul")
    assert silu.steps_over == ["aten::linear"] and silu.library.shape == {"rows": 12, "d": 160}


def test_the_match_is_in_profile_json_and_report_md(workspace):
    shutil.copy(H200_LLAMA, workspace.root / "h200.json.gz")
    result = run_profile(ProfileRequest(trace="h200.json.gz", name="library", plot=False), workspace)
    folder = workspace.root / ".hyperloom" / "profile" / "library"
    stored = [FusionCandidate.model_validate(c) for c in __import__("json").loads((folder / "profile.json").read_text())["fusion"]]
    assert [c.library.kernel if c.library else None for c in stored] == [c.library.kernel if c.library else None for c in result.fusion]
    report = (folder / "report.md").read_text()
    assert "#1 is `add_rmsnorm`" in report and "spec `kernels/triton/add_rmsnorm` at rows=512, cols=2048, bfloat16" in report
    assert "`eps` = 1e-06 (ASSUMED)" in report and "(over aten::mm)" in report
