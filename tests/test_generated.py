"""The near-tie gate for generated tokens (tools/workload/gate/generated.py) on hand-built top-k lists: a candidate may part
from the reference only where the reference was near a tie, after agreeing with its log-probabilities within the
tolerance at every step before; then the freeze/bench path end to end on a tiny transformers decoder on the CPU."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.gate.generated import Generated, companions, judge
from hyperloom.tools.workload.models import OutputTolerance, WorkloadBenchRequest, WorkloadFreezeRequest

TOL = OutputTolerance(atol=0.05)
PROMPT = [7, 8, 9]


def side(steps: list[tuple[int, dict[int, float]]], batch: int = 1) -> Generated:
    """A Generated from (chosen token, {id: log-probability}) per step, the same in every row."""
    k = len(steps[0][1])
    tokens = np.array([PROMPT + [token for token, _ in steps]] * batch, dtype=np.int64)
    ids = np.array([[sorted(top, key=lambda i: -top[i]) for _, top in steps]] * batch, dtype=np.int64)
    logprobs = np.array([[sorted(top.values(), reverse=True) for _, top in steps]] * batch, dtype=np.float32)
    assert ids.shape == logprobs.shape == (batch, len(steps), k)
    return Generated(tokens, ids, logprobs)


REFERENCE = [(1, {1: -0.5, 2: -1.5, 3: -2.0}), (2, {2: -1.00, 3: -1.04, 4: -3.0}), (4, {4: -0.2, 5: -2.5, 6: -3.0})]


def test_equal_generations_pass_and_the_log_probabilities_may_move_within_the_tolerance():
    passed, detail = judge(side(REFERENCE, batch=2), side(REFERENCE, batch=2), TOL)
    assert passed and detail.startswith("2/2 rows equal to the end"), detail
    moved = [(1, {1: -0.46, 2: -1.53, 3: -2.04}), *REFERENCE[1:]]
    assert judge(side(moved), side(REFERENCE), TOL)[0]


def test_a_parting_at_a_near_tie_passes_and_what_follows_it_is_not_compared():
    # step 1: the reference chose 2 over 3 by 0.04 nats, within two tolerances (0.1): the candidate may choose 3; after
    # it, the candidate goes on from another token, so its third step (wildly different) is not compared
    parted = [REFERENCE[0], (3, {3: -1.01, 2: -1.03, 4: -3.0}), (9, {9: -0.1, 8: -5.0, 7: -6.0})]
    passed, detail = judge(side(parted), side(REFERENCE), TOL)
    assert passed and "1 parted at a near tie (steps 1;" in detail and ("1 of 3 generated tokens after a parting not "
                                                                        "compared") in detail, detail


def test_a_parting_wider_than_the_tolerance_allows_is_refused():
    wide = [(2, {2: -0.48, 1: -0.52, 3: -2.0}), *REFERENCE[1:]]  # id 2 moved up by 1.02 nats to win
    passed, detail = judge(side(wide), side(REFERENCE), TOL)
    assert not passed and "row 0 step 0: id 2 has log-probability" in detail, detail
    # the candidate's lists agree with the reference's within the tolerance, yet it chose the second token, 1 nat behind
    flipped = [(2, {1: -0.5, 2: -1.5, 3: -2.0}), *REFERENCE[1:]]
    passed, detail = judge(side(flipped), side(REFERENCE), TOL)
    assert not passed and "token 2 where the reference chose 1 by 1 nats, more than a tie within the tolerance (0.1)" in detail, detail


def test_a_token_outside_the_reference_s_top_k_and_an_id_missing_from_a_list_are_refused():
    outside = [(5, {5: -0.1, 1: -0.5, 2: -1.5}), *REFERENCE[1:]]
    passed, detail = judge(side(outside), side(REFERENCE), TOL)
    assert not passed and "id 5 (-0.1) is in the candidate's top 3, not in the reference's" in detail, detail
    missing = [(1, {1: -0.5, 2: -1.5, 9: -1.6}), *REFERENCE[1:]]  # id 9 at -1.6 would rank in the reference's top 3 (lowest -2.0)
    passed, detail = judge(side(missing), side(REFERENCE), TOL)
    assert not passed and "id 9 (-1.6) is in the candidate's top 3" in detail, detail
    # id 3 (-2.0) may sit just below the candidate's lowest (-2.03) within the tolerance
    below = [(1, {1: -0.5, 2: -1.5, 9: -2.03}), *REFERENCE[1:]]
    assert judge(side(below), side(REFERENCE), TOL)[0]


def test_a_parting_to_a_token_outside_the_reference_s_top_k_says_when_more_log_probabilities_would_decide_it():
    """A token outside the reference's top k is refused; where the reference's lowest listed value is within the
    tolerance of its pick (a held-out bf16 mixture of experts: near-tie atol 3.9 nats, top 8), the gate cannot tell a
    near tie from a wrong token and says to return more log-probabilities."""
    elsewhere = [(7, REFERENCE[0][1]), *REFERENCE[1:]]  # the same lists, another token: 7, unlisted
    passed, detail = judge(side(elsewhere), side(REFERENCE), TOL)
    assert not passed and "token 7, not among the reference's top 3 (it chose 1)" in detail and ("more "
                                                                                                 "log-probabilities") not in detail, detail
    # 1.5 nats from its pick to its lowest: within 2 x 1.0
    passed, detail = judge(side(elsewhere), side(REFERENCE), OutputTolerance(atol=1.0))
    assert not passed and "a near tie cannot be told from a wrong token; return more log-probabilities (k above 3)" in detail, detail


def test_drift_before_a_parting_nan_a_changed_prompt_and_a_shorter_run_are_refused():
    drifted = [REFERENCE[0], (3, {3: -1.20, 2: -1.21, 4: -3.0}), REFERENCE[2]]
    passed, detail = judge(side(drifted), side(REFERENCE), TOL)
    assert not passed and "row 0 step 1: id 2 has log-probability -1.21, the reference's -1 (allowed +-0.05)" in detail, detail
    nan = side(REFERENCE)
    nan.logprobs[0, 2, 1] = np.nan
    assert "NaN or infinite" in judge(nan, side(REFERENCE), TOL)[1]
    prompt = side(REFERENCE)
    prompt.tokens[0, 0] = 99
    assert judge(prompt, side(REFERENCE), TOL) == (False, "the prompt differs from the frozen baseline's")
    passed, detail = judge(side(REFERENCE[:2]), side(REFERENCE), TOL)
    assert not passed and "row 0: 2 generated tokens, the reference's 3, with no token apart in any row" in detail, detail
    longer = Generated(np.array([[0, *PROMPT, 1, 2]]), side(REFERENCE).ids[:, :2], side(REFERENCE).logprobs[:, :2])  # a prompt of 4
    assert "batch, prompt and k must match" in judge(longer, side(REFERENCE), TOL)[1]


def test_a_row_that_parted_may_change_where_generate_cut_every_row():
    """generate cuts its output where the last row stopped: a row that parted may stop later, so an unparted row, equal
    to its end, comes back longer; with no parting anywhere another length is refused (above)."""
    parted = [REFERENCE[0], (3, {3: -1.01, 2: -1.03, 4: -3.0}), REFERENCE[2], (5, {5: -0.3, 6: -2.0, 7: -2.5})]
    rows = side(parted, batch=2)
    rows.tokens[1, 3 + 1:] = [2, 4, 0]  # row 1 is the reference's, padded after its end
    rows.ids[1, 1], rows.logprobs[1, 1] = side(REFERENCE).ids[0, 1], side(REFERENCE).logprobs[0, 1]
    passed, detail = judge(rows, side(REFERENCE, batch=2), TOL)
    assert passed and "1/2 rows equal to the end" in detail and "1 parted at a near tie (steps 1;" in detail, detail


def test_shapes_and_dtypes_that_cannot_be_read_are_named():
    good = side(REFERENCE)
    flat = Generated(good.tokens, good.ids[0], good.logprobs[0])
    assert "must be [batch, prompt + steps]" in judge(flat, good, TOL)[1]
    floats = Generated(good.tokens.astype(np.float32), good.ids, good.logprobs)
    assert "must be integers" in judge(floats, good, TOL)[1]


def test_only_an_output_with_both_companions_is_read_as_generated_tokens():
    assert companions(["tokens", "tokens.top_ids", "tokens.top_logprobs", "y"]) == {"tokens": ("tokens.top_ids", "tokens.top_logprobs")}
    assert companions(["tokens", "tokens.top_ids"]) == {}


TINY = {"layers": "1", "hidden": "128", "prompt_tokens": "8", "new_tokens": "6", "top_logprobs": "4"}
FAST = {"pairs": 5, "steps_per_leg": 1, "warmup_steps": 1, "max_baseline_legs": 5, "timeout_s": 300.0}


def test_the_decoder_example_with_top_logprobs_is_frozen_under_its_declared_tolerance_and_gated_by_the_near_tie_rule(workspace):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    shutil.copy(REPO / "examples" / "workloads" / "decoder.py", workspace.root / "decoder.py")
    frozen = workload_freeze(WorkloadFreezeRequest(workload="decoder.py:build", name="gen", knobs=TINY, timeout_s=300,
                                                   per_output={"tokens.top_logprobs": {"rtol": 0.01}}), workspace)
    tolerances = {o.name: o.tolerance for o in frozen.outputs}
    assert sorted(tolerances) == ["tokens", "tokens.top_ids", "tokens.top_logprobs"]
    assert tolerances["tokens.top_logprobs"] == OutputTolerance(atol=0.04, rtol=0.01)  # the workload's atol, the caller's rtol
    result = workload_bench(WorkloadBenchRequest(name="gen", candidates=[["knob:cache=static", "decode_loop"], ["knob:top_logprobs=2"]],
                                                 **FAST), workspace)
    looped, fewer = result.candidates
    assert looped.verdict in ("FASTER", "NOT_FASTER"), looped.reason
    assert next(e for e in looped.engagement if e.lever == "decode_loop").engaged  # the loop kept the logits, no fallback
    checks = {c.output: c for c in looped.outputs}
    assert checks["tokens"].passed and ("rows equal to the end, top-4 log-probabilities within atol 0.04, rtol "
                                        "0.01") in checks["tokens"].detail
    assert checks["tokens.top_logprobs"].detail == "judged with tokens (its near-tie gate)"
    assert fewer.verdict == "REJECTED" and "batch, prompt and k must match" in fewer.reason, fewer.reason


TIED = '''
import os
import numpy as np

class Tied:
    tolerances = {"tokens.top_logprobs": {"atol": 0.04}}

    def __init__(self, drift):
        try:  # the first build to claim the file is build 0, the other build 1 (freeze builds its two runs at once)
            os.close(os.open(f"claimed-{drift}", os.O_CREAT | os.O_EXCL))
            self.n = 0
        except FileExistsError:
            self.n = 1
        self.drift = drift

    def step(self):
        pass

    def outputs(self):
        ids = np.array([[[1, 2, 3]]]) if self.n % 2 == 0 else np.array([[[1, 3, 2]]])  # 2 and 3 tie: either order
        logprobs = np.array([[[-0.5, -1.0, -1.0]]], dtype=np.float32) + (0.2 * self.n if self.drift == "yes" else 0.0)
        return {"tokens": np.array([[7, 1]]), "tokens.top_ids": ids, "tokens.top_logprobs": logprobs}

def build(drift: str = "no"):
    return Tied(drift)
'''


def test_freeze_judges_its_two_baseline_runs_by_the_near_tie_gate(workspace):
    """Two runs of one baseline may list an exact tie in either order (unequal ids, element by element): the gate
    candidates meet reads them as equal; log-probabilities that move beyond the tolerance between runs are refused."""
    (workspace.root / "tied.py").write_text(TIED)
    frozen = workload_freeze(WorkloadFreezeRequest(workload="tied.py:build", name="tied", timeout_s=120), workspace)
    assert frozen.ok and {o.name: o.spread for o in frozen.outputs}["tokens.top_ids"] > 0  # unequal ids, recorded
    with pytest.raises(HyperloomError, match="tokens with its top-k log-probabilities: 1/1 rows fail: row 0 step 0"):
        workload_freeze(WorkloadFreezeRequest(workload="tied.py:build", name="drifting", knobs={"drift": "yes"}, timeout_s=120), workspace)


BEAMS = '''
import numpy as np

class Beams:
    def step(self):
        pass

    def outputs(self):  # a beam search's lists, one per beam (2 rows x 2 beams), beside the 2 chosen sequences
        logprobs = np.sort(np.random.default_rng(0).normal(size=(4, 3, 5)), axis=-1)[..., ::-1].astype(np.float32)
        return {"tokens": np.arange(12).reshape(2, 6), "tokens.top_ids": np.tile(np.arange(5), (4, 3, 1)), "tokens.top_logprobs": logprobs}

def build():
    return Beams()
'''


def test_a_generated_group_whose_lists_do_not_fit_its_tokens_is_refused_at_freeze_with_what_to_return(workspace):
    """Lists that do not fit their tokens (here a beam search's, one per beam: [batch x beams, steps] beside the chosen
    [batch, ...] sequences): named as a generated group, freeze raised an IndexError deep in the drift measure. Refused
    now, before any twin, saying what to return; nothing is frozen."""
    (workspace.root / "beams.py").write_text(BEAMS)
    with pytest.raises(HyperloomError,
                       match=r"name a generated group \(the near-tie gate\) that does not fit: the baseline: top_ids \[4, 3, 5\] "
                                             r"do not fit tokens \[2, 6\].*rename the lists"):
        workload_freeze(WorkloadFreezeRequest(workload="beams.py:build", name="beams", timeout_s=120), workspace)
    assert not (workspace.root / ".hyperloom" / "workload" / "beams" / "workload.json").exists()


def test_a_workload_s_declared_tolerances_must_name_its_outputs_and_be_tolerances(workspace):
    body = ("import numpy as np\nclass W:\n    tolerances = {TOL}\n    def step(self): pass\n    def outputs(self): return {{'y': "
            "np.ones(2)}}\ndef build(): return W()\n")
    for name, tolerances, message in (("unknown", "{'z': {'atol': 1}}", "the workload's `tolerances` names z"),
                                      ("negative", "{'y': {'atol': -1}}", "is not a tolerance"),
                                      ("misspelled", "{'y': {'tol': 1}}", "it has tol"),
                                      ("not a dict", "[1]", "must be a dict")):
        (workspace.root / f"{name.replace(' ', '_')}.py").write_text(body.format(TOL=tolerances))
        with pytest.raises(HyperloomError, match=message):
            workload_freeze(WorkloadFreezeRequest(workload=f"{name.replace(' ', '_')}.py:build", name=name.replace(" ", "_"),
                                                  timeout_s=120), workspace)


def _continuation_case():
    """One row, prompt [5], three steps: the reference picks 1, 2, 3; at step 1 it rates 2 and 4 a near tie."""
    ids = np.array([[[1, 0], [2, 4], [3, 0]]])
    logprobs = np.array([[[-0.1, -3.0], [-0.70, -0.71], [-0.2, -2.5]]], dtype=np.float32)
    reference = Generated(np.array([[5, 1, 2, 3]]), ids, logprobs)
    scored = np.full((1, 3, 8), -10.0)
    scored[0, 0, 1] = scored[0, 1, 2] = scored[0, 1, 4] = scored[0, 2, 6] = 0.0  # on the candidate's prefix the model picks 6 last
    return reference, scored


def test_after_a_near_tie_parting_the_candidate_s_own_tokens_must_be_the_reference_model_s_picks():
    from hyperloom.tools.workload.gate import continuation

    reference, scored = _continuation_case()
    tolerance = OutputTolerance(atol=0.02)
    parted = np.array([[[1, 0], [4, 2], [6, 0]]]), np.array([[[-0.1, -3.0], [-0.70, -0.71], [-0.0003, -10.0]]], dtype=np.float32)
    honest = Generated(np.array([[5, 1, 4, 6]]), *parted)
    padded = Generated(np.array([[5, 1, 4, 0]]), *parted)  # parts at the tie, then pads
    assert continuation.judge("tokens", honest, reference, scored, tolerance, eos=[], pad=None).passed
    reused = Generated(np.array([[5, 1, 4, 6]]), np.array([[[1, 0], [4, 2], [1, 0]]]),
                       np.array([[[-0.1, -3.0], [-0.70, -0.71], [-0.1, -3.0]]], np.float32))
    # its first step's list reported again after the parting
    refused = continuation.judge("tokens", reused, reference, scored, tolerance, eos=[], pad=None)
    assert not refused.passed and ("row 0 step 2, after its parting at step 1: the log-probabilities it reported are not the reference "
                                   "model's") in refused.detail
    refused = continuation.judge("tokens", padded, reference, scored, tolerance, eos=[], pad=None)
    assert not refused.passed and "token 0" in refused.detail and "its own pick 6" in refused.detail
    stopped = continuation.judge("tokens", Generated(np.array([[5, 1, 4, 6]]), *parted), reference, scored, tolerance, eos=[4], pad=9)
    assert not stopped.passed and "not the pad 9" in stopped.detail  # after EOS 4 only the pad may follow
    assert continuation.judge("tokens", reference, reference, scored, tolerance, eos=[], pad=None) is None  # no parting: nothing to score


DECODING = '''
from typing import Literal
import torch
import transformers

class Chat:
    def __init__(self, mode):
        torch.manual_seed(0)
        config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                          vocab_size=64, initializer_range=0.3)
        self.model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
        self.prompt = torch.randint(3, 64, (2, 6), generator=torch.Generator().manual_seed(1))
        self.how = {"greedy": {}, "sample": {"do_sample": True}, "penalty": {"repetition_penalty": 1.3}}[mode]

    def step(self):
        torch.manual_seed(1234)
        with torch.inference_mode():
            out = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), max_new_tokens=4, min_new_tokens=4,
                                      return_dict_in_generate=True, output_logits=True, **self.how)
        top = torch.stack(out.logits, dim=1).float().log_softmax(-1).topk(4, dim=-1)
        self.result = {"tokens": out.sequences, "tokens.top_ids": top.indices, "tokens.top_logprobs": top.values}

    def outputs(self):
        return self.result

def build(mode: Literal["greedy", "sample", "penalty"] = "greedy"):
    torch.set_num_threads(1)
    return Chat(mode)
'''  # noqa: E501


@pytest.mark.parametrize(("mode", "why"),
                         [("sample", r"sampling \(do_sample\)"), ("penalty", "generate argument repetition_penalty shapes the tokens")])
def test_tokens_from_a_generate_that_is_not_greedy_are_refused_by_the_near_tie_gate_at_freeze(workspace, mode, why):
    """The near-tie gate reads each token as its step's argmax: on a held-out Llama sampling in its step (seeded),
    compile and sdpa_math were refused after a parting, the continuation not the reference model's picks. Freeze now
    says the generate is not greedy, and what to do; a greedy one freezes."""
    pytest.importorskip("transformers")
    (workspace.root / "chat.py").write_text(DECODING)
    with pytest.raises(HyperloomError,
                       match=f"tokens came from a generate that does not decode greedily \\({why}.*generate greedily to gate"):
        workload_freeze(WorkloadFreezeRequest(workload="chat.py:build", name=mode, knobs={"mode": mode}, timeout_s=120), workspace)
    assert workload_freeze(WorkloadFreezeRequest(workload="chat.py:build", name="greedy", timeout_s=120), workspace).ok
