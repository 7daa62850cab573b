"""The weight-only quantization levers (issue 46 item 3): a Linear's weights stored in int8 or fp8 with a scale per row,
half their bf16 bytes, the LM head's tied weights copied not moved; composed with fused projections; compiled without a
graph break; refused by the derived rule on a decoder, and tried by optimize unasked only under a looser twin rule the
user declared."""

from __future__ import annotations

import pytest

from hyperloom.tools.optimize.applies import present, unmet
from hyperloom.tools.workload.checks.engagement import engagement
from hyperloom.tools.workload.gate.frozen import Frozen
from hyperloom.tools.workload.levers import check_candidate, lever
from hyperloom.tools.workload.models import DerivedTolerance, OutputTolerance

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from hyperloom.tools.workload.worker.levers import fused_projections, weight_only  # noqa: E402 - after torch is known present


def _llama(tied=True):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=300, tie_word_embeddings=tied)
    return transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()


def _rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


@pytest.mark.parametrize("form", ["int8", "fp8"])
def test_every_linear_is_stored_narrow_at_half_the_bytes_close_to_the_model_and_the_tied_embedding_keeps_its_weights(form):
    model, ids = _llama(), torch.randint(0, 300, (2, 12))
    with torch.no_grad():
        reference, embedding = model(ids).logits, model.model.embed_tokens.weight.clone()
        counted = weight_only.quantize(torch, model, form)
        assert counted["layers"] == 2 * 7 + 1  # q k v o gate up down a layer, and the LM head
        assert counted["bytes_after"] < 0.52 * counted["bytes_before"]  # one byte a weight and a bf16 scale a row, against two bytes
        assert model.lm_head.weight.dtype == getattr(torch, weight_only.FORMATS[form][0])
        assert torch.equal(model.model.embed_tokens.weight, embedding)
        error = _rel(model(ids).logits, reference)
        assert 0 < error < 0.1, error  # rounded, not wrong


def test_fused_groups_are_quantized_too_and_the_result_matches_quantizing_the_fused_weights():
    model, ids = _llama(), torch.randint(0, 300, (2, 12))
    with torch.no_grad():
        fused_projections.fuse(torch, model)
        counted = weight_only.quantize(torch, model, "int8")
        attention = model.model.layers[0].self_attn
        assert type(attention.fused_q_proj_k_proj_v_proj).__name__ == "WeightOnlyLinear"
        assert counted["layers"] == 2 * 4 + 1  # qkv, o, gate-up, down a layer, and the LM head
        shared = attention.__dict__[fused_projections.GROUPS_ATTR][0]
        assert shared.fused is attention.fused_q_proj_k_proj_v_proj  # the group reads the narrow layer
        logits = model(ids).logits
        assert torch.isfinite(logits.float()).all()
        other = torch.randn(2, 12, 128, dtype=torch.bfloat16)  # a member on another input: the narrow layer's rows
        torch.testing.assert_close(attention.k_proj(other), attention.fused_q_proj_k_proj_v_proj(other)[..., 128:192])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Inductor's own use of torch.jit, inside compile
def test_a_quantized_model_compiles_without_a_graph_break():
    model, ids = _llama(tied=False), torch.randint(0, 300, (1, 8))
    with torch.no_grad():
        weight_only.quantize(torch, model, "int8")
        eager = model(ids).logits
        model.forward = torch.compile(model.forward, fullgraph=True)
        assert _rel(model(ids).logits, eager) < 0.02


def test_the_lever_s_evidence_bad_inputs_and_what_optimize_reads():
    [said] = engagement([lever("int8_weight_only")], {"weight_only": {"layers": 15, "bytes_before": 2_000_000, "bytes_after": 1_010_000}},
                        {}, {})
    assert said.engaged and "15 Linear layer(s) in int8" in said.evidence and "2.0 -> 1.0 MB" in said.evidence
    [said] = engagement([lever("fp8_weight_only")], {"weight_only": {"layers": 0}}, {}, {})
    assert not said.engaged and "no plain floating-point Linear" in said.evidence
    with pytest.raises(Exception, match="two quantize levers"):
        check_candidate(["int8_weight_only", "fp8_weight_only"], "cpu", {})
    with pytest.raises(Exception, match="torch.nn.Module"):
        weight_only.quantize(torch, object(), "int8")
    # it pays inside compiled code: waits for a stack that brings some, by the catalog or in the stack's profiled step
    assert unmet(lever("int8_weight_only"), {}, {"ops": {"aten::mm": 4}, "compiled_graphs": 0}).deferred
    assert present({"ops": {"aten::mm": 4, "cudaGraphLaunch": 32}, "compiled_graphs": 3}) == {"compiled", "graph_launch"}
    assert present({"ops": {"aten::mm": 4}, "compiled_graphs": 0}) == frozenset()
    assert present({}) == frozenset()  # nothing profiled: nothing shown


def _frozen(**tolerance):
    return Frozen(folder=None, target=None, tolerances={"y": OutputTolerance(**tolerance)}, declared_knobs={}, vendor="cpu",
                  manifest_sha256="")


def test_only_a_twin_rule_looser_than_the_default_lets_optimize_try_a_lossy_lever_unasked():
    rule = {"twin_dtype": "float32", "baseline_error": {"rel_l2": 0.01}, "floor": 2.0 ** -7}
    assert not _frozen(derived=DerivedTolerance(k=1.5, **rule)).looser_twin_rule()
    assert _frozen(derived=DerivedTolerance(k=4, **rule)).looser_twin_rule()
    assert not _frozen(atol=0.1, rtol=0.05).looser_twin_rule()  # an absolute tolerance says nothing of the model's own error
    assert lever("int8_weight_only").lossy and not lever("compile").lossy


def test_inductor_s_coordinate_descent_is_a_gpu_setting_made_before_any_compile_and_engaged_by_compiled_graphs():
    """gpt-fast's setting for a weight-only layer's fused conversion: it waits for compiled code like the quantizations."""
    item = _inductor_gpu_setting("inductor_coordinate_descent", "coordinate_descent_tuning")
    [said] = engagement([item], {"compiled_graphs": 2}, {}, {})
    assert said.engaged and "2 graph(s) compiled" in said.evidence
    [said] = engagement([item], {"compiled_graphs": 0}, {}, {})
    assert not said.engaged and "stack it on a compiled candidate" in said.evidence


def test_inductor_s_combo_kernels_are_a_gpu_setting_engaged_only_where_the_step_ran_fewer_device_kernels():
    """Combo kernels act on compiled code (a decode step's small kernels launched as one): set before any compile,
    engaged on a kernel count below the reference's, never on compiled graphs alone."""
    item = _inductor_gpu_setting("inductor_combo_kernels", "combo_kernels")
    reference = {"kernels": {"triton_poi_fused_add_0": 16, "triton_poi_fused_mul_1": 16, "nvjet_gemv": 112}}
    [said] = engagement([item], {"compiled_graphs": 1, "kernels": {"triton_poi_fused_add_mul_0": 16, "nvjet_gemv": 112}}, reference, {})
    assert said.engaged and "device kernels in one step 144 -> 128" in said.evidence
    [said] = engagement([item], {"compiled_graphs": 1, "kernels": reference["kernels"]}, reference, {})
    assert not said.engaged and "no fewer than the reference's" in said.evidence
    [said] = engagement([item], {"compiled_graphs": 0, "kernels": {}}, reference, {})
    assert not said.engaged and "stack it on a compiled candidate" in said.evidence
    [said] = engagement([item], {"compiled_graphs": 2}, {}, {})  # no kernel counts (a CPU profile): not proven
    assert not said.engaged and "no device kernels to count" in said.evidence


def _inductor_gpu_setting(name, attribute):
    """The catalog lever `name`: a GPU setting waiting for compiled code, refused on a CPU, whose worker setting turns
    torch._inductor.config's `attribute` on (restored after)."""
    import torch._inductor.config as inductor_config

    from hyperloom.tools.workload.worker import worker_build

    item = lever(name)
    assert item.kind == "setting" and item.needs == "compiled" and "cpu" not in item.vendors
    with pytest.raises(Exception, match="does not apply on this machine"):
        check_candidate([name], "cpu", {})
    before = getattr(inductor_config, attribute)
    try:
        worker_build.setting(torch, item.value)
        assert getattr(inductor_config, attribute) is True
    finally:
        worker_build.restore_settings()  # what a kept worker does before serving the next candidate
    assert getattr(inductor_config, attribute) == before
    return item
