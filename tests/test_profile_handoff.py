"""Hand-offs that are specs (issue 31, item 2): profile writes a draft folder (kernel.yaml, reference.py, handoff.json) for
the top hotspots and fusion candidates of the H200 Llama capture; spec_check accepts the library drafts as written (bf16
buffers at the recorded shapes, no TODO), an unmatched chain's draft lists its TODOs and nothing else, every draft's
reference runs, and a with_stack trace names the module forward integrate will replace."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import REPO
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.models import Handoff, ProfileRequest
from hyperloom.tools.profile.tolerance import suggest_tolerance
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.spec.models import SpecCheckRequest

PROFILE = REPO / "tests" / "fixtures" / "profile"
H200_LLAMA = PROFILE / "h200_llama_trace.json.gz"  # lab/device-runs/profile_llama.py on the lent H200
CPU_STACK = PROFILE / "cpu_decoder_stack_trace.json"  # capture_cpu_decoder.py --stack: HF's Qwen2RMSNorm and Qwen2MLP, with_stack=True
torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.fixture(scope="module")
def h200(tmp_path_factory) -> tuple:
    from hyperloom.core.workspace import Workspace

    root = tmp_path_factory.mktemp("ws")
    shutil.copy(H200_LLAMA, root / "h200.json.gz")
    workspace = Workspace.at(root)
    result = run_profile(ProfileRequest(trace="h200.json.gz", name="h200", plot=False), workspace)
    return workspace, {h.folder.rsplit("/", 1)[-1]: h for h in result.handoff}


def _check(workspace, handoff: Handoff):
    return run_spec_check(SpecCheckRequest(spec=handoff.spec), workspace)


def _spec(workspace, handoff: Handoff) -> dict:
    return yaml.safe_load((workspace.root / handoff.spec).read_text())


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"ref_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_profile_drafts_the_top_hotspots_and_fusion_candidates_and_every_library_chain(h200):
    _, drafts = h200
    assert sorted(drafts) == ["fusion1_add_rmsnorm", "fusion2_silu_and_mul", "fusion3_mul_add", "fusion4_rmsnorm", "hotspot1_mm",
                              "hotspot2_mm", "hotspot3_mm"]
    assert drafts["fusion1_add_rmsnorm"].ranks == [1, 6]  # prefill and decode: one draft at both recorded shapes
    assert drafts["fusion1_add_rmsnorm"].shapes == [{"rows": 512, "cols": 2048}, {"rows": 1, "cols": 2048}]


@pytest.mark.parametrize("name", ["fusion1_add_rmsnorm", "fusion4_rmsnorm", "fusion2_silu_and_mul"])
def test_a_library_chains_draft_passes_spec_check_as_written_in_bfloat16(h200, name):
    workspace, drafts = h200
    handoff = drafts[name]
    result = _check(workspace, handoff)
    assert result.ok and not [p for p in result.problems if p.severity in ("error", "todo")], result.problems
    assert result.reference is not None and handoff.todos == []
    spec = _spec(workspace, handoff)
    library = yaml.safe_load((REPO / "kernels" / "triton" / handoff.library / "kernel.yaml").read_text())
    assert spec["variants"] == library["variants"] and spec["tuning"] == library["tuning"] and spec["source"] == library["source"]
    assert ((workspace.root / handoff.folder / spec["source"]).read_bytes()
            == (REPO / "kernels" / "triton" / handoff.library / spec["source"]).read_bytes())
    assert {a["dtype"] for a in spec["args"] if a["kind"] == "buffer"} == {"bfloat16"}  # as recorded, not the library's float32
    assert spec["tolerance"] == {"atol": 0.0, "rtol": 0.0, "max_ulp": 2} and handoff.tolerance["tag"] == "ASSUMED"
    stored = Handoff.model_validate_json((workspace.root / handoff.folder / "handoff.json").read_text())
    assert stored == handoff and stored.launcher.split(":")[0] == spec["source"] and stored.module is None
    assert any("no Python stack" in n for n in stored.notes)  # this trace has none: integrate replaces the aten ops


def test_the_library_drafts_metric_counts_bfloat16_bytes(h200):
    workspace, drafts = h200
    spec = _spec(workspace, drafts["fusion4_rmsnorm"])
    from hyperloom.tools.kernelspec.expr import evaluate

    # x, y and the weight, 2 bytes each
    assert evaluate(spec["metric"]["bytes"], {"rows": 512, "cols": 2048}) == 2 * (2 * 512 * 2048 + 2048)


def test_the_rmsnorm_drafts_reference_is_hf_s_eager_module_bit_for_bit(h200):
    workspace, drafts = h200
    module = _load(workspace.root / drafts["fusion1_add_rmsnorm"].folder / "reference.py")
    gen = torch.Generator().manual_seed(0)
    x, residual = torch.randn(3, 2048, generator=gen).bfloat16(), torch.randn(3, 2048, generator=gen).bfloat16()
    weight = (torch.rand(2048, generator=gen) + 0.5).bfloat16()
    values = {k: v.float().numpy().astype(ml_dtypes.bfloat16) for k, v in {"x": x, "residual": residual, "weight": weight}.items()}
    out = module.reference(values, {"rows": 3, "cols": 2048})
    total = residual + x  # Qwen2DecoderLayer's residual, then Qwen2RMSNorm.forward
    h = total.to(torch.float32)
    expected = weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    assert np.array_equal(out["y"], expected.float().numpy()) and np.array_equal(out["residual"], total.float().numpy())


def test_a_chain_the_library_does_not_cover_lists_its_todos_and_nothing_else(h200):
    workspace, drafts = h200
    handoff = drafts["fusion3_mul_add"]
    assert handoff.library is None and [t.split(":")[0] for t in handoff.todos] == ["source", "variants.triton.entry"]
    result = _check(workspace, handoff)
    assert not result.ok and {(p.severity, p.path) for p in result.problems if p.severity != "warning"} == {("todo", "source"),
                                                                                                            ("todo",
                                                                                                             "variants.triton.entry")}
    assert result.reference is not None  # the contract is checked while the kernel is still to write
    spec = _spec(workspace, handoff)
    assert [(a["name"], a["shape"]) for a in spec["args"]] == [("in0", [1, 32, 512, 64]), ("in1", [1, 1, 512, 64]),
                                                               ("in2", [1, 32, 512, 64]), ("out", [1, 32, 512, 64])]


def test_a_hotspot_drafts_reference_runs_in_spec_check(h200):
    workspace, drafts = h200
    handoff = drafts["hotspot3_mm"]
    result = _check(workspace, handoff)
    assert result.reference is not None and result.reference.outputs == {"out": "bfloat16 [512, 512]"}
    assert {p.path for p in result.problems if p.severity in ("error", "todo")} == {"source", "variants.triton.entry"}
    assert handoff.metric["flops"] == 2 * 512 * 2048 * 512 and handoff.tolerance["rtol"] == pytest.approx(1.6e-2)


def test_an_unrecorded_scalar_is_a_todo_the_reference_waits_for(tmp_path):
    from hyperloom.core.workspace import Workspace

    shutil.copy(H200_LLAMA, tmp_path / "h200.json.gz")
    workspace = Workspace.at(tmp_path)
    from hyperloom.tools.profile.analyse import analyse
    from hyperloom.tools.profile.handoff import fusion_drafts
    from hyperloom.tools.profile.load import read_trace
    from hyperloom.tools.profile.roof import from_datasheet

    a = analyse(read_trace(tmp_path / "h200.json.gz", "h200"), from_datasheet("NVIDIA H200"))
    rank = next(i for i, c in enumerate(a.fusion, start=1) if c.ops[:2] == ["aten::cos", "aten::mul"])
    draft, _ = next(d for d in fusion_drafts(a.fusion, a.fusion_runs, "h200", rank) if d[1]["rank"] == rank)
    assert [t for t in draft.todos if t.startswith("args")] == ["args op2_arg1: op 2 aten::mul, argument 1 (float64) was not recorded",
                                                                  "args op4_arg1: op 4 aten::mul, argument 1 (float64) was not recorded"]
    folder = tmp_path / "draft"
    folder.mkdir()
    (folder / "kernel.yaml").write_text(draft.kernel_yaml())
    (folder / "reference.py").write_text(draft.reference)
    result = run_spec_check(SpecCheckRequest(spec="draft"), workspace)
    scalars = {f"args[{i}].value" for i, a in enumerate(draft.spec["args"]) if a["kind"] == "scalar"}
    assert len(scalars) == 2 and {p.path for p in result.problems if p.severity == "todo"} >= scalars and result.reference is None
    assert not [p for p in result.problems if p.severity == "error"]
    inputs = {name: np.ones(dims, dtype=np.float32) for name, dims in _load(folder / "reference.py").SHAPES.items()}
    with pytest.raises(ValueError, match="write its number there"):
        _load(folder / "reference.py").reference(inputs, {})
    spec = yaml.safe_load((folder / "kernel.yaml").read_text())
    for arg in spec["args"]:
        if arg["kind"] == "scalar":
            arg["value"] = 0.5  # read from the model (Llama's attention_scaling is 1.0 by default)
    (folder / "kernel.yaml").write_text(yaml.safe_dump(spec))
    out = _load(folder / "reference.py").reference(inputs, {})["out"]
    assert out.shape == (1, 512, 64) and out.dtype == np.float32  # the last copy_ writes bfloat16: float32 values the gate rounds


def test_a_trace_with_a_python_stack_names_the_module_forward_to_replace(workspace):
    shutil.copy(CPU_STACK, workspace.root / "stack.json")
    result = run_profile(ProfileRequest(trace="stack.json", name="stack", plot=False), workspace)
    by_kernel = {h.library: h for h in result.handoff if h.library}
    assert by_kernel["rmsnorm"].module == "capture_cpu_decoder:Qwen2RMSNorm.forward"
    assert by_kernel["silu_and_mul"].module == "capture_cpu_decoder:Qwen2MLP.forward"
    add = by_kernel["add_rmsnorm"]  # the residual add runs in the layer's own code, the norm in Qwen2RMSNorm
    assert add.module is None and any("Qwen2RMSNorm.forward" in n for n in add.notes)
    hotspot = next(h for h in result.handoff if h.kind == "hotspot" and h.ops == ["aten::addmm"])
    assert hotspot.module == "torch.nn.modules.linear:Linear.forward"


def test_a_module_whose_forward_a_lever_replaced_is_not_named_after_a_child_s_file(workspace):
    """decode_gemv replaces a gated MLP's forward by its own function (not named forward): the first forward frame inside
    the MLP's call is then a child's (a projection's), and naming the file from it wrote a target that does not exist
    (on the H100: hyperloom.tools.workload.fused_projections:LlamaMLP.forward, RAISED). The real trace, the MLP's own
    frame renamed as such a lever's."""
    trace = json.loads(CPU_STACK.read_text())
    for event in trace["traceEvents"]:
        if event.get("cat") == "python_function" and event["name"] == "capture_cpu_decoder.py(38): forward":
            event["name"] = "hyperloom/tools/workload/worker/levers/decode_gemv.py(170): _mlp_forward"
    (workspace.root / "stack.json").write_text(json.dumps(trace))
    result = run_profile(ProfileRequest(trace="stack.json", name="stack", plot=False), workspace)
    by_kernel = {h.library: h for h in result.handoff if h.library}
    assert by_kernel["silu_and_mul"].module in (None, "Qwen2MLP.forward"), by_kernel["silu_and_mul"].module
    assert by_kernel["rmsnorm"].module == "capture_cpu_decoder:Qwen2RMSNorm.forward"  # a module with its own forward: as before


@pytest.mark.parametrize(("dtype", "kind", "expected"), [
    ("bfloat16", "normalization", {"atol": 0.0, "rtol": 0.0, "max_ulp": 2}),
    ("bfloat16", "gemm", {"atol": 1.6e-2, "rtol": 1.6e-2, "max_ulp": None}),
    ("float16", "elementwise", {"atol": 0.0, "rtol": 0.0, "max_ulp": 2}),
    ("float32", "elementwise", {"atol": 1e-6, "rtol": 1e-5, "max_ulp": None}),
    ("float32", "normalization", {"atol": 1e-5, "rtol": 1e-4, "max_ulp": None}),
    ("int64", "memory copy", {"atol": 0.0, "rtol": 0.0, "max_ulp": None}),
])
def test_the_suggested_tolerance_follows_the_dtype_and_the_op(dtype, kind, expected):
    suggested = suggest_tolerance(dtype, kind)
    assert {k: getattr(suggested.tolerance, k) for k in expected} == expected and dtype in suggested.why
