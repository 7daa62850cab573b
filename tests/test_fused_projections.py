"""The fuse_projections lever (issue 46: fewer, wider GEMMs): sibling projections fused on transformers models of two
families, eager and compiled, the same numbers; groups it cannot place left apart with why; members called on
different inputs still right (and then not engaged); the lever through a bench on a user's plain decoder, alone and
under decode_loop; what optimize reads before trying it."""

from __future__ import annotations

import copy

import pytest

from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.optimize.applies import unmet
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.checks.engagement import engagement
from hyperloom.tools.workload.levers import check_candidate, lever
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from hyperloom.tools.workload.worker.levers import fused_projections, model_changes  # noqa: E402 - after torch is known present

FAST = {"pairs": 5, "steps_per_leg": 1, "warmup_steps": 1, "max_baseline_legs": 6, "timeout_s": 240.0}


def _llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=300)
    return transformers.LlamaForCausalLM(config).eval()


class _Workload:
    def __init__(self, model):
        self.model = model


def _gemm_ops(model, *args):
    with torch.profiler.profile() as prof:
        model(*args)
    return sum(e.count for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Inductor's own use of torch.jit, inside compile
def test_a_llama_s_projections_fuse_into_two_gemms_a_layer_with_the_same_logits_eager_copied_and_compiled():
    model, ids = _llama(), torch.randint(0, 300, (2, 12))
    with torch.no_grad():
        reference, gemms, params = model(ids).logits, _gemm_ops(model, ids), sum(p.numel() for p in model.parameters())
        assert model_changes.facts(torch, _Workload(model))["projection_groups"] == 4
        placement = fused_projections.fuse(torch, model)
        assert placement.as_dict() == {"placed": {"q_proj+k_proj+v_proj": 2, "gate_proj+up_proj": 2}, "not_placed": {}}
        assert sum(p.numel() for p in model.parameters()) == params  # the separate weights are gone, not kept beside
        assert torch.equal(model(ids).logits, reference)
        k_proj = model.model.layers[1].self_attn.k_proj  # what code reading a projection's weight sees: its rows, a view
        assert k_proj.weight.shape == (64, 128) and k_proj.weight.data_ptr() != 0 and k_proj.bias is None
        assert _gemm_ops(model, ids) == gemms - 2 * (2 + 1)  # per layer q, k, v -> one; gate, up -> one
        copied = copy.deepcopy(model)  # a kept worker's copy: a fused model of its own
        with torch.no_grad():
            copied.model.layers[0].self_attn.fused_q_proj_k_proj_v_proj.weight.mul_(2)
        assert torch.equal(model(ids).logits, reference) and not torch.equal(copied(ids).logits, reference)
        model.forward = torch.compile(model.forward, fullgraph=True)  # no graph break: the shared product stays inside
        torch.testing.assert_close(model(ids).logits, reference, rtol=1e-5, atol=1e-5)


def test_bert_s_query_key_value_fuse_with_their_biases():
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                           intermediate_size=128)).eval()
    ids = torch.randint(0, 1000, (2, 10))
    with torch.no_grad():
        reference = model(ids).last_hidden_state
        assert fused_projections.fuse(torch, model).placed == {"query+key+value": 2}
        torch.testing.assert_close(model(ids).last_hidden_state, reference, rtol=0, atol=1e-6)


@pytest.mark.parametrize("family", ["distilbert", "t5"])
def test_families_that_name_their_projections_their_own_way_fuse_with_the_same_outputs(family):
    """DistilBERT's q_lin/k_lin/v_lin; T5's q/k/v (self-attention fused, cross-attention's k/v read the encoder's states:
    parts computed apart) and its gated MLP's wi_0/wi_1. Before these names the lever read NO_OP on both."""
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 10))
    if family == "distilbert":
        model = transformers.DistilBertModel(transformers.DistilBertConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4,
                                                                           hidden_dim=128)).eval()
        run, expected = (lambda: model(ids).last_hidden_state), {"q_lin+k_lin+v_lin": 2}
    else:
        model = transformers.T5ForConditionalGeneration(transformers.T5Config(vocab_size=100, d_model=64, d_ff=128, d_kv=16, num_heads=4,
                                                                              num_layers=1, feed_forward_proj="gated-gelu",
                                                                              decoder_start_token_id=0)).eval()
        run, expected = (lambda: model(input_ids=ids, decoder_input_ids=ids[:, :4]).logits), {"q+k+v": 3, "wi_0+wi_1": 2}
    with torch.no_grad():
        reference = run()
        assert fused_projections.fuse(torch, model).placed == expected
        torch.testing.assert_close(run(), reference, rtol=1e-5, atol=1e-5)


def test_a_model_with_no_known_group_says_which_names_were_looked_for():
    [said] = engagement([lever("fuse_projections")], {"fused_projections": {"placed": {}, "not_placed": {}}}, {}, {})
    assert not said.engaged and "none of the known groups (q_proj/k_proj/v_proj" in said.evidence and "GPT-2's c_attn" in said.evidence


class _Attention(torch.nn.Module):
    """q reads the input, k and v another tensor (a cross-attention): the members never share an input."""

    def __init__(self, width=16, other=16, bias=True):
        super().__init__()
        self.q_proj = torch.nn.Linear(width, 8, bias=bias)
        self.k_proj = torch.nn.Linear(other, 8, bias=False)
        self.v_proj = torch.nn.Linear(other, 8, bias=bias)

    def forward(self, x, memory):
        return self.q_proj(x) * self.k_proj(memory).sum(-1, keepdim=True) + self.v_proj(memory)


def test_members_called_on_different_inputs_are_still_right_and_the_lever_is_not_engaged():
    torch.manual_seed(0)
    module, x, memory = _Attention(), torch.randn(3, 16), torch.randn(3, 16)
    with torch.no_grad():
        reference = module(x, memory)
        assert fused_projections.fuse(torch, module).placed == {"q_proj+k_proj+v_proj": 1}  # mixed biases: zeros where none
        torch.testing.assert_close(module(x, memory), reference, rtol=0, atol=1e-6)
        torch.testing.assert_close(module(x, memory), reference, rtol=0, atol=1e-6)  # nothing stale from the last call
        gemms = _gemm_ops(module, x, memory)
    seen = {"ops": {"aten::addmm": gemms}, "fused_projections": {"placed": {"q_proj+k_proj+v_proj": 1}, "not_placed": {}}}
    [said] = engagement([lever("fuse_projections")], seen, {"ops": {"aten::addmm": 3}}, {})
    assert not said.engaged and "3 -> 3" in said.evidence and "different inputs" in said.evidence


def test_groups_it_cannot_place_are_left_apart_with_why_and_a_model_without_any_is_not_tried():
    class Quantized(torch.nn.Linear):
        pass

    widths = _Attention(other=12)
    custom = _Attention()
    custom.v_proj = Quantized(16, 8)
    for module, why in ((widths, "different widths"), (custom, "not a plain torch.nn.Linear")):
        before = {k: v.clone() for k, v in module.state_dict().items()}
        placement = fused_projections.fuse(torch, module)
        assert not placement.placed and why in next(iter(placement.not_placed)), placement
        assert module.state_dict().keys() == before.keys()  # untouched
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    facts = model_changes.facts(torch, _Workload(conv))
    assert facts["projection_groups"] == 0 and "no sibling projections" in unmet(lever("fuse_projections"), facts, {}).reason
    assert unmet(lever("fuse_projections"), {}, {}) is None  # nothing known: tried
    with pytest.raises(WorkloadContractError, match="torch.nn.Module"):
        fused_projections.fuse(torch, None)
    [said] = engagement([lever("fuse_projections")], {"fused_projections": placement.as_dict()}, {}, {})
    assert not said.engaged and "left apart" in said.evidence and "not a plain" in said.evidence


def test_the_lever_is_one_of_a_kind_in_a_candidate():
    with pytest.raises(Exception, match="named twice"):
        check_candidate(["fuse_projections", "fuse_projections"], "cpu", {})
    assert [item.kind for item in check_candidate(["fuse_projections", "compile"], "cpu", {})] == ["fusion", "compile"]


def test_a_user_s_plain_decoder_takes_the_lever_alone_and_under_decode_loop_gated_by_its_twin(user):
    workload_freeze(WorkloadFreezeRequest(workload="decoder.py:build", name="dec", timeout_s=240), user)
    candidates = [["fuse_projections"], ["fuse_projections", "static_cache", "decode_loop"]]
    result = workload_bench(WorkloadBenchRequest(name="dec", candidates=candidates, **FAST), user)
    seen = {"+".join(c.levers): c for c in result.candidates}
    for name, candidate in seen.items():
        assert candidate.verdict in ("FASTER", "NOT_FASTER"), (name, candidate.verdict, candidate.reason)
        assert all(o.passed for o in candidate.outputs), candidate.outputs
        assert all(e.engaged for e in candidate.engagement), candidate.engagement
    fused = next(e for e in seen["fuse_projections"].engagement if e.lever == "fuse_projections")
    assert "4 x q_proj+k_proj+v_proj, 4 x gate_proj+up_proj" in fused.evidence and "GEMM" in fused.evidence


NO_MODEL = '''
import numpy as np

class Plain:
    def step(self):
        self.y = np.arange(4.0)
    def outputs(self):
        return {"y": self.y}

def build():
    return Plain()
'''


def test_a_model_lever_on_a_workload_without_a_torch_model_is_raised_with_what_it_needs(workspace):
    (workspace.root / "plain.py").write_text(NO_MODEL)
    workload_freeze(WorkloadFreezeRequest(workload="plain.py:build", name="plain", atol=1e-6, timeout_s=120), workspace)
    result = workload_bench(WorkloadBenchRequest(name="plain", candidates=[["fuse_projections"], ["int8_weight_only"]], **FAST), workspace)
    for candidate in result.candidates:
        assert candidate.verdict == "RAISED" and ("needs the workload's `model` attribute to be a "
                                                  "torch.nn.Module") in candidate.reason, candidate.reason
