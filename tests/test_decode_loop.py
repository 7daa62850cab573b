"""The decode_loop lever on the CPU: transformers' greedy static-cache generate replaced by Hyperloom's loop, which
must give the very tokens transformers gives, take only the calls it covers (each other one runs transformers' own
generate, with the reason counted), and go through the workload A/B as any lever: NO_OP on a dynamic cache, gated
and engaged on a static one. The compiled, graph-replayed path runs on a GPU only (results/h200/optimize)."""

from __future__ import annotations

import os

import pytest

from hyperloom.core.errors import HyperloomError
from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.workload.worker.levers import decode_loop
from hyperloom.tools.workload.api import workload_bench, workload_freeze
from hyperloom.tools.workload.levers import check_candidate
from hyperloom.tools.workload.models import WorkloadBenchRequest, WorkloadFreezeRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
            max_position_embeddings=256, tie_word_embeddings=True, initializer_range=0.5)  # wide weights: varied tokens, no repeats
GREEDY = dict(max_new_tokens=10, min_new_tokens=10, do_sample=False, pad_token_id=0, cache_implementation="static")

WORKLOAD = '''
from typing import Literal
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

class Decoder:
    def __init__(self, cache):
        torch.manual_seed(0)
        torch.set_num_threads(1)
        self.model = Qwen2ForCausalLM(Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                  num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)).eval()
        self.model.generation_config.pad_token_id = 0
        self.prompt = torch.randint(1, 512, (2, 16), generator=torch.Generator().manual_seed(1))
        self.options = {"cache_implementation": "static"} if cache == "static" else {}

    def step(self):
        with torch.inference_mode():
            self.tokens = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), max_new_tokens=8, min_new_tokens=8,
                                              do_sample=False, pad_token_id=0, **self.options)

    def outputs(self):
        return {"tokens": self.tokens}

def build(cache: Literal["dynamic", "static"] = "dynamic"):
    return Decoder(cache)
'''
FAST = {"pairs": 5, "steps_per_leg": 2, "warmup_steps": 1, "max_baseline_legs": 6, "timeout_s": 300.0}


@pytest.fixture
def model():
    torch.manual_seed(0)
    tiny = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**TINY)).eval()
    tiny.generation_config.pad_token_id = 0
    return tiny


@pytest.fixture
def prompt():
    return torch.randint(1, TINY["vocab_size"], (3, 20), generator=torch.Generator().manual_seed(1))


def test_the_loop_gives_the_tokens_transformers_gives_and_counts_its_calls(model, prompt):
    with torch.inference_mode():
        theirs = model.generate(prompt, attention_mask=torch.ones_like(prompt), **GREEDY)
        decode_loop.install(model, compiled=False)
        before = decode_loop.COUNTS.snapshot()["loop"]
        ours = [model.generate(prompt, attention_mask=torch.ones_like(prompt), **GREEDY) for _ in range(2)]  # the second on the reset cache
        shorter = model.generate(prompt[:, :12], **{**GREEDY, "max_new_tokens": 4, "min_new_tokens": 4})  # a second cache shape
    assert all(torch.equal(tokens, theirs) for tokens in ours), (theirs, ours[0])
    assert shorter.shape == (3, 16) and torch.equal(shorter[:, :12], prompt[:, :12])
    assert decode_loop.COUNTS.snapshot()["loop"] - before == 3


@pytest.mark.parametrize("window", [None, 16])
def test_the_kv_bytes_a_decode_reads_count_the_filled_slots_of_each_layer_a_sliding_window_at_most(prompt, window):
    """A replayed step at position p reads the p + 1 slots filled so far, keys and values once: a profile's replay roof
    adds their mean to the weights. 20-token prompt, 10 new tokens: steps at 20..28 read 21..29 slots (225 in all), or
    16 each under a 16-slot sliding window (144); a slot of a layer holds keys and values of 3 rows x 2 heads x 16, fp32."""
    torch.manual_seed(0)
    shape = {**TINY, "sliding_window": window} if window else TINY
    tiny = transformers.MistralForCausalLM(transformers.MistralConfig(**shape)).eval()
    tiny.generation_config.pad_token_id = 0
    with torch.inference_mode():
        decode_loop.install(tiny, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        tiny.generate(prompt, attention_mask=torch.ones_like(prompt), **GREEDY)
    slot_bytes = 2 * 3 * 2 * 16 * 4 * TINY["num_hidden_layers"]
    assert decode_loop.COUNTS.since(before)["kv_read_bytes"] == (144 if window else 225) * slot_bytes
    assert decode_loop.COUNTS.kv_bytes_per_step(before) == (144 if window else 225) * slot_bytes // 9
    assert decode_loop.COUNTS.kv_bytes_per_step(decode_loop.COUNTS.snapshot()) is None  # no step since


def test_generate_s_eos_rules_give_the_same_tokens_and_length(model, prompt):
    """EOS is applied as generate applies it, without a sync per token: banned before min_new_tokens, the pad after a
    row's EOS, the output cut where the last row stopped. The EOS ids are tokens the free run makes mid-way."""
    with torch.inference_mode():
        free = model.generate(prompt, **GREEDY)[:, prompt.shape[1]:]
        assert len({int(t) for t in free[0]}) > 3  # the rules below only bite on varied tokens
        mid = [int(free[0, 2]), int(free[1, 4]), int(free[2, 1])]
        cases = [{"eos_token_id": int(free[0, 3]), "min_new_tokens": 0}, {"eos_token_id": mid, "min_new_tokens": 0},
                 {"eos_token_id": mid, "min_new_tokens": 3}, {"eos_token_id": int(free[1, 5]), "pad_token_id": None, "min_new_tokens": 0},
                 {"eos_token_id": mid}]  # the last: min_new_tokens = max_new_tokens, EOS banned throughout
        theirs = [model.generate(prompt, **{**GREEDY, **case}) for case in cases]
        decode_loop.install(model, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = [model.generate(prompt, **{**GREEDY, **case}) for case in cases]
    assert theirs[1].shape[1] < prompt.shape[1] + GREEDY["max_new_tokens"]  # every row stopped early: the output is shorter
    for case, a, b in zip(cases, theirs, ours):
        assert a.shape == b.shape and torch.equal(a, b), (case, a, b)
    after = decode_loop.COUNTS.snapshot()
    assert after["loop"] - before["loop"] == len(cases) and after["fallbacks"] == before["fallbacks"]


def test_the_loop_returns_generate_s_output_record_with_each_token_s_raw_logits_when_asked(model, prompt):
    """return_dict_in_generate with output_logits: the sequences and one float32 logits row per new token, as
    transformers keeps them (the decoder example's near-tie gate reads them)."""
    asked = {**GREEDY, "return_dict_in_generate": True, "output_logits": True}
    with torch.inference_mode():
        theirs = [model.generate(prompt, **case) for case in (asked, {**GREEDY, "return_dict_in_generate": True})]
        decode_loop.install(model, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = [model.generate(prompt, **case) for case in (asked, {**GREEDY, "return_dict_in_generate": True})]
    assert {k: v for k, v in decode_loop.COUNTS.since(before).items() if k in ("loop", "fallbacks")} == {"loop": 2, "fallbacks": {}}
    assert type(theirs[0]) is type(ours[0]) and torch.equal(theirs[0].sequences, ours[0].sequences)
    assert len(theirs[0].logits) == len(ours[0].logits) == GREEDY["max_new_tokens"]
    assert all(x.dtype == y.dtype == torch.float32 and torch.allclose(x, y, atol=1e-4, rtol=1e-5)
               for x, y in zip(theirs[0].logits, ours[0].logits))
    assert ours[1].logits is None and theirs[1].logits is None and torch.equal(ours[1].sequences, theirs[1].sequences)
    assert "output_scores" in decode_loop.uncovered(model, prompt, {**asked, "output_scores": True})


def test_with_an_eos_the_loop_feeds_a_stopped_row_the_pad_and_keeps_generate_s_logits(model, prompt):
    """After a row's EOS generate feeds it the pad, and its later logits are the model's on the pad: the loop does
    the same on the device, so a plain generate asking for its logits (a user's top-k log-probabilities) takes it."""
    with torch.inference_mode():
        free = model.generate(prompt, **GREEDY)[:, prompt.shape[1]:]
        asked = {**GREEDY, "return_dict_in_generate": True, "output_logits": True, "eos_token_id": int(free[0, 2]), "pad_token_id": 0}
        theirs = model.generate(prompt, **asked)
        decode_loop.install(model, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = model.generate(prompt, **asked)
    assert {k: v for k, v in decode_loop.COUNTS.since(before).items() if k in ("loop", "fallbacks")} == {"loop": 1, "fallbacks": {}}
    assert torch.equal(theirs.sequences, ours.sequences) and len(theirs.logits) == len(ours.logits)
    assert all(torch.allclose(x, y, atol=1e-4, rtol=1e-5) for x, y in zip(theirs.logits, ours.logits))


@pytest.mark.parametrize(("change", "reason"), [
    ({"cache_implementation": None}, "dynamic KV cache"),
    ({"do_sample": True}, "sampling (do_sample)"),
    ({"num_beams": 2}, "beam search (num_beams=2)"),
    ({"streamer": object()}, "generate argument streamer"),
    ({"max_new_tokens": None}, "no max_new_tokens"),
    ({"output_scores": True}, "generate argument output_scores"),
    ({"use_cache": False}, "use_cache=False"),
])
def test_a_call_the_loop_does_not_cover_exactly_is_named(model, prompt, change, reason):
    assert decode_loop.uncovered(model, prompt, {**GREEDY, **change}) is not None
    assert reason in decode_loop.uncovered(model, prompt, {**GREEDY, **change})
    assert decode_loop.uncovered(model, prompt, dict(GREEDY)) is None


def test_right_padding_and_a_logits_processor_in_the_models_config_are_not_covered(model, prompt):
    padded = torch.ones_like(prompt)
    padded[0, :3] = 0
    assert decode_loop.uncovered(model, prompt, {**GREEDY, "attention_mask": padded}) is None  # left padding: covered
    assert "padded on the right" in decode_loop.uncovered(model, prompt, {**GREEDY, "attention_mask": padded.flip(-1)})
    assert "not of the prompt's shape" in decode_loop.uncovered(model, prompt, {**GREEDY, "attention_mask": padded[:, 1:]})
    model.generation_config.repetition_penalty = 1.3
    assert "repetition_penalty" in decode_loop.uncovered(model, prompt, dict(GREEDY))
    assert "2-D input_ids" in decode_loop.uncovered(model, prompt[0], dict(GREEDY))


def test_a_fallback_runs_transformers_generate_and_gives_its_tokens(model, prompt):
    with torch.inference_mode():
        theirs = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)  # dynamic cache
        decode_loop.install(model, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(ours, theirs)
    added = decode_loop.COUNTS.since(before)["fallbacks"]
    assert list(added.values()) == [1] and "dynamic KV cache" in next(iter(added))


def test_a_workload_without_a_transformers_model_is_refused_with_the_way_out():
    with pytest.raises(WorkloadContractError,
                       match=r"the workload's model is a Linear, which has no generate\(\) .*an encoder.*leave the lever out"):
        decode_loop.install(torch.nn.Linear(2, 2), compiled=False)
    with pytest.raises(WorkloadContractError, match=r"this workload has no `model`"):
        decode_loop.install(None, compiled=False)
    from hyperloom.tools.workload.worker.levers.model_changes import static_cache

    encoder = transformers.BertModel(transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                             intermediate_size=64))
    with pytest.raises(WorkloadContractError, match="the static_cache lever .* model is a BertModel, which has no generate"):
        static_cache(encoder)
    with pytest.raises(HyperloomError, match="separate candidates"):
        check_candidate(["decode_loop", "graph"], "cuda", {})


def test_the_lever_is_a_no_op_on_a_dynamic_cache_and_engaged_and_gated_on_a_static_one(workspace):
    (workspace.root / "tiny_decoder.py").write_text(WORKLOAD)
    workload_freeze(WorkloadFreezeRequest(workload="tiny_decoder.py:build", name="tiny", timeout_s=300), workspace)
    result = workload_bench(WorkloadBenchRequest(name="tiny", candidates=[["decode_loop"], ["knob:cache=static", "decode_loop"]], **FAST),
                            workspace)
    alone, stacked = result.candidates
    assert alone.verdict == "NO_OP" and "dynamic KV cache" in alone.reason, alone.reason
    assert stacked.verdict in ("FASTER", "NOT_FASTER"), stacked.reason  # through the gate: the frozen tokens, exactly
    loop = next(e for e in stacked.engagement if e.lever == "decode_loop")
    assert loop.engaged and loop.calls == 1 and "took the loop" in loop.evidence, loop.evidence


def test_a_profiled_stack_reports_the_kv_bytes_its_replayed_steps_read_for_the_replay_roof(workspace):
    """The campaign's profile of a decode_loop stack: the worker's trace entry counts the loop's steps and the KV
    slots they read (2 rows, 16-token prompt, 8 new tokens: steps at 16..22 read 17..23 slots, 140 in all, each
    slot keys and values of 2 heads x 16 in fp32 over 2 layers), which the replay roof adds to the weights."""
    from hyperloom.tools.optimize.proposals import _stack_capture, roof_note
    from hyperloom.tools.workload.gate.frozen import read_frozen
    from hyperloom.tools.workload.levers import prepared

    (workspace.root / "tiny_decoder.py").write_text(WORKLOAD)
    workload_freeze(WorkloadFreezeRequest(workload="tiny_decoder.py:build", name="tiny", timeout_s=300), workspace)
    frozen = read_frozen("tiny", workspace)
    folder = workspace.state_dir("profile", "kv")
    looped = _stack_capture(frozen, prepared(["knob:cache=static", "decode_loop"], frozen.vendor, frozen.declared_knobs, workspace), folder,
                            workspace, 300.0)
    assert looped.extra["kv_read_bytes_per_replay"] == 140 * (2 * 2 * 2 * 16 * 4 * 2) // 7, looped.extra
    plain = _stack_capture(frozen, prepared(["knob:cache=static"], frozen.vendor, frozen.declared_knobs, workspace), folder, workspace,
                           300.0)
    assert "kv_read_bytes_per_replay" not in plain.extra  # transformers' own generate: no loop counted its read
    assert "0.02 MB a replayed step" in roof_note(10**6, looped.extra["kv_read_bytes_per_replay"])
    assert "lower bound" in roof_note(10**6, 0)


FAMILIES = {  # held-out families the loop was not written for: each forward reads the mask or positions its own way
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)),
    "opt": ("OPTConfig", "OPTForCausalLM",
            dict(hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4, word_embed_proj_dim=64)),
    # ALiBi from the mask's length
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(hidden_size=64, n_layer=2, n_head=4, attn_implementation="eager")),
    # its EOS (50,256) past this vocabulary
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=64, n_layer=2, n_head=4, n_positions=256)),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                              num_key_value_heads=2, sliding_window=16)),
}


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_loop_gives_transformers_tokens_on_model_families_it_was_not_written_for(family, padded):
    """OPT counts its positions from the mask, Bloom builds ALiBi from its length: a 2-D mask over the whole static cache
    (the loop's until this test) raised in both; generate passes a static cache's forward none for an unpadded batch. A
    left-padded batch (prompts of unequal lengths, as a tokenizer pads them for generate) fell back to generate, the
    lever NO_OP on a held-out padded Llama: it now gets the mask over the whole cache and each row's positions from its
    first real token, on a model whose forward takes position_ids (Bloom's, without, still falls back, saying so)."""
    config_name, model_name, shape = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_name)(**{"vocab_size": 512, "initializer_range": 0.5, "attn_implementation": "sdpa", **shape})
    tiny = getattr(transformers, model_name)(config).eval()
    prompt = torch.randint(1, 512, (3, 20), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(prompt)
    if padded:
        mask[1, :5], mask[2, :11] = 0, 0
        prompt[mask == 0] = 0
    asked = dict(GREEDY, return_dict_in_generate=True, output_logits=True)
    with torch.inference_mode():
        theirs = tiny.generate(prompt, attention_mask=mask, **asked)
        decode_loop.install(tiny, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = tiny.generate(prompt, attention_mask=mask, **asked)
    counted = decode_loop.COUNTS.since(before)
    if padded and family == "bloom":
        assert counted["loop"] == 0 and list(counted["fallbacks"]) == ["a padded batch on BloomForCausalLM (the loop gives padded rows "
                                                                       "their positions through position_ids)"]
        return
    assert (counted["loop"], counted["fallbacks"], counted["steps"]) == (1, {}, 9), counted
    assert torch.equal(ours.sequences, theirs.sequences), (family, theirs.sequences, ours.sequences)
    assert torch.allclose(torch.stack(ours.logits), torch.stack(theirs.logits), atol=1e-4, rtol=1e-4)


def test_an_encoder_decoder_model_runs_transformers_generate_with_the_reason_counted():
    torch.manual_seed(0)
    config = transformers.BartConfig(vocab_size=512, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                                     decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)
    tiny = transformers.BartForConditionalGeneration(config).eval()
    prompt = torch.randint(3, 512, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        theirs = tiny.generate(prompt, **GREEDY)
        decode_loop.install(tiny, compiled=False)
        before = decode_loop.COUNTS.snapshot()
        ours = tiny.generate(prompt, **GREEDY)
    assert torch.equal(ours, theirs)
    assert decode_loop.COUNTS.since(before) == {"loop": 0, "fallbacks": {"an encoder-decoder model (the loop decodes a decoder-only "
                                                                         "model's tokens)": 1},
                                                "steps": 0, "kv_read_bytes": 0}


def test_a_library_s_raise_under_a_lever_names_the_lever_s_frame_beside_the_library_s():
    """What a worker reports as where a candidate raised: the innermost frame outside Hyperloom (the library that raised),
    and, where a lever of ours called it from the user's code path, that lever's frame: a RAISED candidate's reason
    named only transformers' sdpa_attention.py when decode_loop had made the call."""
    from hyperloom.core.worker_main import _innermost

    class Library:
        config = generation_config = None

        def forward(self, input_ids=None):  # noqa: ANN001 - a model's forward, as GreedyDecode reads its parameters
            return input_ids

        def generate(self, inputs, **kwargs):  # noqa: ANN001
            raise ValueError("the library refuses")

    loop = decode_loop.GreedyDecode(Library(), compiled=False)
    with pytest.raises(ValueError) as caught:
        loop("not a tensor")  # not covered: the loop calls the library's generate
    where = _innermost(caught.value)
    # a user's file: relative to the working folder
    shown = os.path.relpath(__file__) if not os.path.relpath(__file__).startswith("..") else __file__
    assert where.startswith(f"{shown}:") and "(through hyperloom/tools/workload/worker/levers/decode_loop.py:" in where, where
    with pytest.raises(ValueError) as direct:
        Library().generate(None)
    assert "through" not in _innermost(direct.value)


PADDED = '''
import torch
import transformers

class Batch:
    def __init__(self):
        torch.manual_seed(0)
        torch.set_num_threads(1)
        config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                          vocab_size=256, initializer_range=0.3, pad_token_id=0)
        self.model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
        self.prompt = torch.zeros(2, 12, dtype=torch.long)
        self.mask = torch.ones_like(self.prompt)
        self.mask[1, :5] = 0  # the second prompt 5 tokens shorter, left-padded as a tokenizer pads for generate
        self.inputs(0)

    def inputs(self, seed):
        drawn = torch.randint(3, 256, tuple(self.prompt.shape), generator=torch.Generator().manual_seed(seed))
        self.prompt.copy_(drawn * self.mask)

    def step(self):
        with torch.inference_mode():
            out = self.model.generate(self.prompt, attention_mask=self.mask, max_new_tokens=6, min_new_tokens=6, do_sample=False,
                                      return_dict_in_generate=True, output_logits=True)
        top = torch.stack(out.logits, dim=1).float().log_softmax(-1).topk(8, dim=-1)
        self.result = {"tokens": out.sequences, "tokens.top_ids": top.indices, "tokens.top_logprobs": top.values}

    def outputs(self):
        return self.result

def build():
    return Batch()
'''  # noqa: E501


def test_a_left_padded_batch_takes_the_loop_and_passes_the_twin_rule_with_its_tokens_scored_under_their_mask(workspace):
    """A held-out padded Llama: the loop fell back (NO_OP), and once it took the batch its tokens were teacher-forced
    without their mask (the recorder sat under the loop, which replaces generate): rel_l2 5.4x the baseline's, REJECTED.
    The loop takes it now, and the recorder, outermost, gives teacher forcing the mask."""
    (workspace.root / "padded.py").write_text(PADDED)
    workload_freeze(WorkloadFreezeRequest(workload="padded.py:build", name="padded", timeout_s=300), workspace)
    [stacked] = workload_bench(WorkloadBenchRequest(name="padded", candidates=[["static_cache", "decode_loop"]], **FAST),
                               workspace).candidates
    assert stacked.verdict in ("FASTER", "NOT_FASTER"), stacked.reason
    loop = next(e for e in stacked.engagement if e.lever == "decode_loop")
    assert loop.engaged and "took the loop" in loop.evidence, loop.evidence


def test_a_processor_that_only_bans_tokens_keeps_generate_greedy_for_the_gate_not_for_the_loop(model, prompt):
    """Whisper's generation_config bans tokens from its first step (begin_suppress_tokens): each token is still the
    argmax of those left, as the near-tie gate reads it (a held-out Whisper was refused as "not greedy" for it); the loop,
    which applies no such processor, still does not take the call. A penalty is not greedy for either."""
    model.generation_config.begin_suppress_tokens = [5, 7]
    assert decode_loop.not_greedy(model, dict(GREEDY), bans_too=False) is None
    assert ("begin_suppress_tokens" in decode_loop.not_greedy(model, dict(GREEDY))
            and "begin_suppress_tokens" in decode_loop.uncovered(model, prompt, dict(GREEDY)))
    assert "generate argument repetition_penalty" in decode_loop.not_greedy(model, {**GREEDY, "repetition_penalty": 1.2}, bans_too=False)
    assert decode_loop.not_greedy(model, {**GREEDY, "suppress_tokens": [3]}, bans_too=False) is None
