"""The kernel levers (issue 46: library kernels routed into a model, inside the replayed graph). decode_attention
(attention that reads only the filled part of a static cache): the library's Triton kernel against a float64 attention in Triton's
interpreter (grouped query heads,
a dim and a group that are no powers of two, bool, additive and no masks, a mask with holes per batch row, the cache
split over programs), what it refuses and why; the route on a transformers Llama (the same tokens and logits as SDPA,
prefills left to SDPA, an unrouted model in the same process untouched, a copy routed too, eager attention not
routed); its engagement from host calls or a replayed graph's kernels; decode_loop's two-pass argmax equal to argmax.
decode_gemv (a decode step's linear layers): the GEMV against float64 for one to eight rows, its refusals, a fused
Llama's decode linears through it with the same tokens (prefill GEMMs and the output embeddings left to cuBLAS)."""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys

import pytest

from helpers import REPO
from hyperloom.tools.workload.checks.engagement import engagement
from hyperloom.tools.workload.levers import check_candidate, lever

torch = pytest.importorskip("torch")
FRESH = "HYPERLOOM_TEST_KERNEL_ROUTES_FRESH"
HAS_TRITON = importlib.util.find_spec("triton") is not None
in_fresh_interpreter = pytest.mark.skipif(os.environ.get(FRESH) != "1",
                                          reason="runs in a fresh Python with TRITON_INTERPRET=1 (the test below)")


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (pip install 'hyperloom[triton]')")
def test_the_kernel_tests_run_in_a_python_whose_triton_started_in_its_interpreter():
    """The tests marked in_fresh_interpreter, in a fresh Python with TRITON_INTERPRET=1 from its start (where another test
    imported triton first, the interpreter refuses triton.language's own @jit helpers)."""
    if os.environ.get(FRESH) == "1":
        pytest.skip("this is the fresh Python")
    env = {**os.environ, FRESH: "1", "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "(kernel_ or route or gemv) and not whose_triton"],
                         env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    last = run.stdout.splitlines()[-1] if run.stdout else ""
    assert run.returncode == 0 and " passed" in last and "skipped" not in last, run.stdout[-3000:] + run.stderr[-2000:]


def _launcher():
    from hyperloom.core.shipped import shipped_kernels
    from hyperloom.tools.triton.entry import load_module

    return load_module(str(shipped_kernels("triton", "decode_attention", "decode_attention.py")))


def _exact(q, k, v, mask, scale):
    """The attention in float64, the K/V repeated for the query heads; -> [batch, 1, heads, dim]."""
    group = q.shape[1] // k.shape[1]
    keys, values = k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    scores = (q.double() @ keys.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.double()
    return (scores.softmax(-1) @ values).transpose(1, 2)


# (batch, heads, kv_heads, slots, dim, params): a group of 3 and a dim of 80; one KV head a query head; a cache split in
# three of blocks of 32, a group of 4
CASES = [(2, 12, 4, 100, 80, None), (1, 8, 8, 700, 64, None), (3, 8, 2, 130, 32, {"SPLIT_SLOTS": 64, "BLOCK_N": 32}),
         (1, 4, 1, 300, 16, None)]  # the last: one KV head, split by the default (few programs: about two a processor)
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2 ** -6}


@in_fresh_interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("masking", ["none", "bool", "additive"])
def test_the_kernel_matches_attention_in_float64_with_grouped_heads_masks_and_splits(dtype, case, masking):
    launcher, (batch, heads, kv_heads, slots, dim, params) = _launcher(), case
    generator = torch.Generator().manual_seed(slots)
    q = torch.randn(batch, heads, 1, dim, generator=generator).to(dtype)
    k, v = (torch.randn(batch, kv_heads, slots, dim, generator=generator).to(dtype) for _ in range(2))
    filled = torch.tensor([slots - 1 - 17 * row for row in range(batch)])  # each batch row filled to its own slot
    keep = (torch.arange(slots) < filled[:, None]).view(batch, 1, 1, slots)
    keep[:, :, :, 3:9] = False  # a hole inside a block
    mask = {"none": None, "bool": keep,
            "additive": torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)}[masking]
    got = launcher.decode_attention(q, k, v, mask, dim ** -0.5, params)
    assert got.shape == (batch, 1, heads, dim) and got.dtype == dtype
    want = _exact(q, k, v, None if mask is None else keep, dim ** -0.5)
    assert float((got.double() - want).abs().max()) <= TOLERANCE[dtype] * max(1.0, float(want.abs().max()))
    if masking == "bool":  # the slots the mask leaves out are not read: poisoning them changes nothing
        k2, v2 = k.clone(), v.clone()
        k2.masked_fill_(~keep.view(batch, 1, slots, 1), float("nan"))
        v2.masked_fill_(~keep.view(batch, 1, slots, 1), float("nan"))
        assert torch.equal(launcher.decode_attention(q, k2, v2, mask, dim ** -0.5, params), got)


@in_fresh_interpreter
def test_the_kernel_refuses_what_it_does_not_compute_with_why():
    launcher = _launcher()
    q, k = torch.randn(1, 8, 1, 16), torch.randn(1, 2, 40, 16)
    cases = [
        ((torch.randn(1, 8, 3, 16), k, k, None), "3 query positions"),
        ((q, torch.randn(1, 3, 40, 16), torch.randn(1, 3, 40, 16), None), "multiple of kv_heads"),
        ((q, k.half(), k.half(), None), "one of float32"),
        ((q, k, k, torch.ones(1, 8, 1, 40, dtype=torch.bool)), "one mask row a batch row"),
        ((q, k, k, torch.ones(1, 1, 1, 40, dtype=torch.int64)), "bool mask"),
    ]
    for args, why in cases:
        assert why in launcher.unsupported(*args)
        with pytest.raises(ValueError, match=why):
            launcher.decode_attention(*args, 0.25)
    assert launcher.unsupported(q, k, k, None) == ""


def _llama(implementation: str = "sdpa"):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=300, attn_implementation=implementation)
    model = transformers.LlamaForCausalLM(config).eval()
    model.generation_config.cache_implementation = "static"
    model.generation_config.eos_token_id = None
    return model


def _generate(model, ids):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=5, do_sample=False, return_dict_in_generate=True, output_logits=True)


@in_fresh_interpreter
def test_a_routed_llama_decodes_the_same_tokens_and_logits_with_prefills_left_to_sdpa_and_other_models_untouched():
    from hyperloom.tools.workload.worker.levers import decode_attention, decode_loop

    plain, ids = _llama(), torch.randint(0, 300, (2, 9))
    routed = copy.deepcopy(plain)
    assert decode_attention.route(torch, routed) == {"routed": 2, "what": "attention module(s) routed", "why": ""}
    before = decode_attention.COUNTS.snapshot()
    want = _generate(plain, ids)  # the unrouted model in the same process: SDPA throughout
    assert decode_attention.COUNTS.since(before) == {"kernel": 0, "fallbacks": {}}
    got = _generate(routed, ids)
    assert decode_attention.COUNTS.since(before) == {"kernel": 4 * 2, "fallbacks": {"prefill": 2}}  # 4 decode steps x 2 layers
    assert torch.equal(got.sequences, want.sequences)
    for mine, theirs in zip(got.logits, want.logits, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    copied = copy.deepcopy(routed)  # a kept worker's candidate: routed too
    decode_loop.install(copied, compiled=False)
    before = decode_attention.COUNTS.snapshot()
    looped = _generate(copied, ids)
    assert decode_attention.COUNTS.since(before)["kernel"] == 4 * 2 and torch.equal(looped.sequences, want.sequences)


@in_fresh_interpreter
def test_a_model_on_eager_attention_is_not_routed_and_says_why():
    from hyperloom.tools.workload.worker.levers import decode_attention

    routed = decode_attention.route(torch, _llama("eager"))
    assert routed["routed"] == 0 and "'eager' (2 attention module(s))" in routed["why"]
    [said] = engagement([lever("decode_attention")], {"decode_attention": {**routed, "kernel": 0, "fallbacks": {}}}, {}, {})
    assert not said.engaged and "'eager'" in said.evidence
    assert "no `model` attribute" in decode_attention.route(torch, None)["why"]


ROUTED = {"routed": 16, "what": "attention module(s) routed", "why": "", "expected": ["prefill"],
          "kernels": ["decode_attention_kernel", "combine_kernel"]}


def test_engagement_reads_host_calls_or_a_replayed_graph_s_kernels_and_refuses_decode_fallbacks():
    attention = lever("decode_attention")
    [eager] = engagement([attention], {"decode_attention": {**ROUTED, "kernel": 32, "fallbacks": {"prefill": 16}}}, {}, {})
    assert eager.engaged and eager.calls == 32 and "16 attention module(s) routed; 32 kernel call(s)" in eager.evidence
    seen = {"decode_attention": {**ROUTED, "kernel": 0, "fallbacks": {"prefill": 16}},
            "kernels": {"decode_attention_kernel": 1008, "nvjet_x": 3}}
    [replayed] = engagement([attention], seen, {"kernels": {"nvjet_x": 3}}, {})
    assert replayed.engaged and "decode_attention_kernel x1008" in replayed.evidence
    [theirs_too] = engagement([attention], seen, {"kernels": {"decode_attention_kernel": 1008}}, {})  # the reference ran it: proves nothing
    assert not theirs_too.engaged and "ran no call through the kernel" in theirs_too.evidence
    [fell_back] = engagement([attention], {"decode_attention": {**ROUTED, "kernel": 8, "fallbacks": {"softcap given": 8}}}, {}, {})
    assert not fell_back.engaged and "fell back to torch's code: softcap given (x8)" in fell_back.evidence


def test_the_lever_is_for_a_gpu_acts_on_attention_and_waits_for_replayed_graphs():
    from hyperloom.tools.optimize.applies import unmet

    attention = lever("decode_attention")
    assert attention.kind == "kernel" and not attention.lossy
    eager_decoder = {"ops": {"aten::scaled_dot_product_attention": 32, "aten::mm": 96}}
    waits = unmet(attention, {}, eager_decoder)  # no graph launch yet: tried on a stack that brings one, not alone
    assert waits is not None and waits.deferred and "graph" in waits.reason
    assert unmet(attention, {}, {"ops": {**eager_decoder["ops"], "cudaGraphLaunch": 1}}) is None
    conv = unmet(attention, {}, {"ops": {"aten::cudnn_convolution": 53, "cudaGraphLaunch": 1}})  # nothing a stack brings helps
    assert conv is not None and not conv.deferred and "scaled_dot_product_attention" in conv.reason
    with pytest.raises(Exception, match="decode_attention"):
        check_candidate(["decode_attention"], "cpu", {})
    assert [item.name for item in check_candidate(["decode_attention", "fuse_projections", "decode_loop"], "cuda", {})] == [
        "decode_attention", "fuse_projections", "decode_loop"]


def test_decode_loop_s_two_pass_argmax_is_argmax_with_ties_infinities_and_a_ragged_last_chunk():
    from hyperloom.tools.workload.worker.levers import decode_loop

    generator = torch.Generator().manual_seed(0)
    for batch, vocabulary in ((3, 128256), (2, 5000), (1, 2049), (4, 2048)):
        logits = torch.randn(batch, vocabulary, generator=generator).to(torch.bfloat16)  # bfloat16: many ties
        logits[0, -1] = 100.0  # the maximum in the padded last chunk
        if batch > 1:
            logits[1] = 1.0  # a row of ties: the first id
        for rows in (logits, torch.full_like(logits, float("-inf")), logits.float()):
            assert torch.equal(decode_loop._argmax(rows), rows.argmax(-1, keepdim=True)), (batch, vocabulary)


# --- decode_gemv ---------------------------------------------------------------------------------------------------

# widths no powers of two, K over many blocks
GEMV_CASES = [(1, 100, 300, True), (1, 64, 2048, False), (3, 70, 200, True), (8, 48, 96, False)]


@in_fresh_interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", GEMV_CASES)
def test_the_gemv_kernel_matches_a_linear_in_float64_for_one_to_eight_rows(dtype, case):
    from hyperloom.tools.workload.worker.levers.kernel_route import launcher

    gemv, (rows, n_out, k_in, with_bias) = launcher(torch, "gemv"), case
    generator = torch.Generator().manual_seed(n_out)
    x = torch.randn(rows, 1, k_in, generator=generator).to(dtype)
    weight = torch.randn(n_out, k_in, generator=generator).to(dtype)
    bias = torch.randn(n_out, generator=generator).to(dtype) if with_bias else None
    got = gemv.gemv(x, weight, bias)
    assert got.shape == (rows, 1, n_out) and got.dtype == dtype
    want = x.double() @ weight.double().T + (bias.double() if with_bias else 0.0)
    assert float((got.double() - want).abs().max()) <= TOLERANCE[dtype] * float(want.abs().max())
    tiles = {"BLOCK_N": 8, "BLOCK_K": 64, "num_warps": 2, "num_stages": 2}  # a tune winner's params: the same numbers
    torch.testing.assert_close(gemv.gemv(x, weight, bias, tiles).double(), want, rtol=0, atol=TOLERANCE[dtype] * float(want.abs().max()))


@in_fresh_interpreter
def test_the_gemv_kernel_refuses_a_gemm_and_mismatched_layers_with_why():
    from hyperloom.tools.workload.worker.levers.kernel_route import launcher

    gemv = launcher(torch, "gemv")
    weight = torch.randn(16, 32)
    cases = [((torch.randn(9, 32), weight, None), "more is a GEMM"), ((torch.randn(1, 31), weight, None), "give x [..., K]"),
             ((torch.randn(1, 32).half(), weight, None), "one of float32"), ((torch.randn(1, 32), weight, torch.randn(15)), "bias (15,)"),
             ((torch.randn(1, 32), torch.randn(32, 16).T, None), "strided along K")]
    for args, why in cases:
        assert why in gemv.unsupported(*args)
        with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace(".", r"\.")):
            gemv.gemv(*args)


@in_fresh_interpreter
def test_a_routed_llama_s_decode_linears_run_the_gemv_with_the_same_tokens_prefill_gemms_left_to_torch(monkeypatch):
    from hyperloom.tools.workload.worker.levers import decode_gemv, fused_projections

    plain, ids = _llama(), torch.randint(0, 300, (1, 9))
    routed = copy.deepcopy(plain)
    fused_projections.fuse(torch, routed)  # the fused layers are routed too
    # by default the norms are not folded, the MLPs' activations are
    assert decode_gemv.route(torch, copy.deepcopy(routed))["what"] == ("linear layer(s) routed, 2 MLP activation(s) folded into their down "
                                                                       "projection's GEMV")
    monkeypatch.setattr(decode_gemv, "FOLD_ACTS", False)  # the norms' fold alone below
    monkeypatch.setattr(decode_gemv, "FOLD_NORMS", True)
    said = decode_gemv.route(torch, routed)
    weights = sum(m.weight.numel() * m.weight.element_size() for m in routed.modules() if type(m) is torch.nn.Linear
                  and m is not routed.lm_head)
    assert said == {"routed": 2 * 4, "what": "linear layer(s) routed, 4 RMSNorm(s) folded into the GEMVs that read them", "why": "",
                    "kernel_bytes": {"gemv_kernel": weights}}  # the weights each decode step reads through the kernel; a layer's
    # fused q/k/v, o, fused gate/up and down; its two norms, each read by one fused layer now
    assert type(routed.model.layers[0].input_layernorm).__name__ == "FoldedNorm" and type(routed.model.norm).__name__ == "LlamaRMSNorm"
    # q/k/v, gate/up fused
    assert routed.state_dict().keys() != plain.state_dict().keys() and len(routed.state_dict()) == len(plain.state_dict()) - 2 * 3
    before = decode_gemv.COUNTS.snapshot()
    want, got = _generate(plain, ids), _generate(routed, ids)
    counted = decode_gemv.COUNTS.since(before)
    # 4 decode steps x 2 layers x 4 layers; the prefill's
    assert counted["kernel"] == 4 * 2 * 4 and counted["fallbacks"] == {"a GEMM": 2 * 4}
    assert torch.equal(got.sequences, want.sequences)
    for mine, theirs in zip(got.logits, want.logits, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    # the output embeddings keep cuBLAS
    assert "forward" not in vars(routed.lm_head) and "forward" in vars(routed.model.layers[0].mlp.down_proj)
    unfused = copy.deepcopy(plain)  # without fusion each of q, k, v (gate, up) normalizes its input itself
    assert decode_gemv.route(torch, unfused)["what"].endswith("4 RMSNorm(s) folded into the GEMVs that read them")
    assert torch.equal(_generate(unfused, ids).sequences, want.sequences)


@in_fresh_interpreter
def test_a_batch_s_decode_calls_run_cublas_unless_the_few_row_tile_is_asked_for_and_give_the_same_tokens(monkeypatch):
    """A decode step of a batch of 3: each routed layer's call has 3 rows. By default they go to torch's linear, counted
    as "a few rows" (EXPECTED: the kernel's few-row tile lost to cuBLAS at batch 8 on the H100), the activation's fold
    too; with FEW_ROWS the kernel takes them. The tokens are generate's either way."""
    from hyperloom.tools.workload.worker.levers import decode_gemv

    plain, ids = _llama(), torch.randint(0, 300, (3, 9))
    want = _generate(plain, ids)
    for few, kernel_calls, fallbacks in ((False, 0, {"a GEMM": 2 * 4, "a few rows": 4 * 2 * 4}), (True, 4 * 2 * 4, {"a GEMM": 2 * 4})):
        monkeypatch.setattr(decode_gemv, "FEW_ROWS", few)
        routed = copy.deepcopy(plain)
        decode_gemv.route(torch, routed)
        before = decode_gemv.COUNTS.snapshot()
        got = _generate(routed, ids)
        counted = decode_gemv.COUNTS.since(before)
        # 4 decode steps x 2 layers x 7 linears (the down projection's call with its activation folded in, or as written)
        assert counted["kernel"] == (4 * 2 * 7 if few else 0) and counted["fallbacks"] == ({"a GEMM": 2 * 7} if few
                                                                                           else {"a GEMM": 2 * 7,
                                                                                                 "a few rows": 4 * 2 * 7}), (few, counted)
        assert torch.equal(got.sequences, want.sequences), few
    assert "a few rows" in decode_gemv.EXPECTED


@in_fresh_interpreter
def test_the_gemv_route_names_the_matmul_layers_it_leaves_to_torch_on_a_family_without_plain_linears():
    """GPT-2 multiplies through transformers' Conv1D (its weight stored transposed), not torch.nn.Linear: nothing is
    routed, and the route says what it left and why instead of only that it found no plain layer."""
    import transformers

    from hyperloom.tools.workload.worker.levers import decode_gemv

    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=300, n_positions=64)).eval()
    said = decode_gemv.route(torch, gpt2)
    assert said["routed"] == 0 and said["kernel_bytes"] == {}
    assert said["why"] == ("the model has no plain torch.nn.Linear layer besides its output embeddings; 8 matmul layer(s) of other types "
                           "left to torch (8 x Conv1D: only a plain torch.nn.Linear is routed)"), said
    llama = _llama()
    assert "other types" not in decode_gemv.route(torch, llama)["what"]  # its linears are plain: nothing else to name


@in_fresh_interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 3])
def test_the_gemv_with_a_folded_activation_matches_silu_gate_times_up_then_the_linear(dtype, rows):
    """The down projection's GEMV with silu(gate) * up folded in; the gate and up as a fused product's slices (strided
    rows) as fuse_projections leaves them."""
    from hyperloom.tools.workload.worker.levers.kernel_route import launcher

    gemv, generator = launcher(torch, "gemv"), torch.Generator().manual_seed(rows)
    product = (2 * torch.randn(rows, 1, 2 * 300, generator=generator)).to(dtype)
    gate, up = product[..., :300], product[..., 300:]
    weight = torch.randn(100, 300, generator=generator).to(dtype)
    with torch.no_grad():
        want = torch.nn.functional.linear((torch.nn.functional.silu(gate) * up).double(), weight.double())
        got = gemv.gemv(gate, weight, None, None, None, 1e-6, up)
    assert got.shape == (rows, 1, 100)
    assert float((got.double() - want).abs().max()) <= {torch.float32: 1e-5, torch.bfloat16: 2 ** -5}[dtype] * float(want.abs().max())
    assert float((gemv.gemv(gate, weight).double() - want).abs().max()) > 0.1 * float(want.abs().max())  # the fold is what makes it right
    assert "give the gate's shape" in gemv.unsupported(gate, weight, None, None, up[..., :299])
    assert "folds one of them" in gemv.unsupported(gate, weight, None, torch.ones(300, dtype=dtype), up)


@in_fresh_interpreter
def test_a_routed_llama_with_its_mlp_activations_folded_decodes_the_same_tokens(monkeypatch):
    from hyperloom.tools.workload.worker.levers import decode_gemv, fused_projections

    plain, ids = _llama(), torch.randint(0, 300, (1, 9))
    want = _generate(plain, ids)
    monkeypatch.setattr(decode_gemv, "FOLD_ACTS", True)
    for fuse in (False, True):  # the gate and up as their own layers, then as a fused product's slices
        routed = copy.deepcopy(plain)
        if fuse:
            fused_projections.fuse(torch, routed)
        said = decode_gemv.route(torch, routed)
        assert said["what"] == "linear layer(s) routed, 2 MLP activation(s) folded into their down projection's GEMV", said
        before = decode_gemv.COUNTS.snapshot()
        got = _generate(routed, ids)
        counted = decode_gemv.COUNTS.since(before)
        # a decoder layer's GEMVs now: q/k/v (fused or three), o, gate/up (fused or two), down with the activation
        layers = 4 if fuse else 7
        # the prefill's down counted once, by its own forward
        assert counted["kernel"] == 4 * 2 * layers and counted["fallbacks"] == {"a GEMM": 2 * layers}
        assert torch.equal(got.sequences, want.sequences)
        for mine, theirs in zip(got.logits, want.logits, strict=True):
            torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    assert "MLP activation" not in decode_gemv.route(torch, _gelu(plain))["what"]  # another activation: not folded


def _gelu(model):
    """A copy of the model whose MLPs use GELU: an activation the kernel's fold does not compute."""
    other = copy.deepcopy(model)
    for layer in other.model.layers:
        layer.mlp.act_fn = torch.nn.GELU()
    return other


@in_fresh_interpreter
def test_a_shape_where_cublas_measured_faster_is_left_to_it_and_a_measured_launch_is_used(monkeypatch, tmp_path):
    """The device's measured choice per weight shape (kernels/triton/gemv/tuned.json, or a caller's TUNED): "cublas"
    leaves those layers to torch's linear and says how many; launch params reach the kernel; a device with no entry
    gets the defaults."""
    from hyperloom.tools.workload.worker.levers import decode_gemv
    from hyperloom.tools.workload.worker.levers.kernel_route import launcher

    gemv = launcher(torch, "gemv")
    table = tmp_path / "tuned.json"
    table.write_text('{"cpu": {"measured": "a test", "shapes": {"128,256": "cublas", "256,128": {"BLOCK_N": 4, "BLOCK_K": 64, "num_warps": '
                     '1, "num_stages": 1}}}, "Another GPU": {"shapes": {"128,128": "cublas"}}}')
    monkeypatch.setattr(gemv, "SHIPPED", table)
    assert gemv.choice(128, 256, "cpu") == "cublas" and gemv.choice(128, 128, "cpu") is None and gemv.choice(128, 128,
                                                                                                             "Another GPU") == "cublas"
    monkeypatch.setitem(gemv.TUNED, (128, 128), {"BLOCK_N": 2, "BLOCK_K": 32, "num_warps": 1, "num_stages": 1})  # a caller's choice first
    assert gemv.choice(128, 128, "cpu") == gemv.TUNED[(128, 128)]
    launched = []
    real = gemv.gemv
    monkeypatch.setattr(gemv, "gemv",
                        lambda x, weight, bias=None, params=None, *rest: launched.append(params) or real(x, weight, bias, params, *rest))
    plain, ids = _llama(), torch.randint(0, 300, (1, 9))
    routed = copy.deepcopy(plain)
    said = decode_gemv.route(torch, routed)  # per layer: q, o (128x128), k, v (64x128), gate, up (256x128), down (128x256)
    assert said["routed"] == 2 * 6 and said["what"].endswith("2 left to cuBLAS (measured faster at their shape on this device: "
                                                             "kernels/triton/gemv/tuned.json)")
    assert "forward" not in vars(routed.model.layers[0].mlp.down_proj) and "forward" in vars(routed.model.layers[0].mlp.up_proj)
    assert torch.equal(_generate(routed, ids).sequences, _generate(plain, ids).sequences)
    assert gemv.TUNED[(128, 128)] in launched and {"BLOCK_N": 4, "BLOCK_K": 64, "num_warps": 1,
                                                   "num_stages": 1} in launched and None in launched
    launched.clear()  # a few rows a call (a batch of 2): cuBLAS's by default; asked for, the kernel's few-row tile runs,
    assert torch.equal(_generate(routed, ids.repeat(2, 1)).sequences, _generate(plain, ids.repeat(2, 1)).sequences)
    assert launched == [], launched
    monkeypatch.setattr(decode_gemv, "FEW_ROWS", True)  # not with the one-row measurements
    assert torch.equal(_generate(routed, ids.repeat(2, 1)).sequences, _generate(plain, ids.repeat(2, 1)).sequences)
    assert launched and all(params is None for params in launched), launched
    monkeypatch.setitem(gemv.TUNED, (128, 256), "cublas")
    for shape in ((128, 128), (64, 128), (256, 128)):
        monkeypatch.setitem(gemv.TUNED, shape, "cublas")
    assert decode_gemv.route(torch, copy.deepcopy(plain)) == {"routed": 0,
                                                              "what": "linear layer(s) routed, 14 left to cuBLAS (measured faster at their "
                                                                "shape on this device: kernels/triton/gemv/tuned.json)",
                                                                "why": "every plain linear layer's shape is one where cuBLAS measured "
                                                                       "faster on this device",
                                                                "kernel_bytes": {}}


@in_fresh_interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 3])
def test_the_gemv_with_a_folded_rmsnorm_matches_the_norm_then_the_linear(dtype, rows):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from hyperloom.tools.workload.worker.levers.kernel_route import launcher

    gemv, generator = launcher(torch, "gemv"), torch.Generator().manual_seed(rows)
    norm = LlamaRMSNorm(300, eps=1e-5).to(dtype)
    norm.weight.data = torch.randn(300, generator=generator).to(dtype)
    x, weight = (3 * torch.randn(rows, 1, 300, generator=generator)).to(dtype), torch.randn(100, 300, generator=generator).to(dtype)
    with torch.no_grad():
        want = torch.nn.functional.linear(norm(x).double(), weight.double())
        got = gemv.gemv(x, weight, None, None, norm.weight, 1e-5)
    # the interpreter rounds to bfloat16 by truncation (a GPU to nearest), twice a normalized element: 2^-5 of the largest
    assert float((got.double() - want).abs().max()) <= {torch.float32: 1e-5, torch.bfloat16: 2 ** -5}[dtype] * float(want.abs().max())
    with torch.no_grad():
        unnormed = gemv.gemv(x, weight)  # the fold is what makes it right: without it the rows' scale is off
    assert float((unnormed.double() - want).abs().max()) > 0.1 * float(want.abs().max())


@in_fresh_interpreter
def test_a_kernel_route_whose_kernel_does_not_build_on_the_device_routes_nothing_and_says_why(monkeypatch):
    """On a GPU each route first launches its kernel at the model's shapes (kernel_route.unbuilt): a kernel Triton cannot
    build or launch there leaves the model as it was, with the error as the lever's reason (NO_OP, not a step that
    raises). Probed here on the CPU's interpreter: the launches pass as they are, then fail as a refused build does."""
    from hyperloom.tools.workload.worker.levers import decode_attention, decode_gemv, kernel_route

    monkeypatch.setattr(kernel_route, "PROBED_ON", ("cuda", "cpu"))
    plain = _llama()
    assert decode_gemv.route(torch, copy.deepcopy(plain))["routed"] == 14  # 2 layers x 7 linears: every probe built and ran
    assert decode_attention.route(torch, copy.deepcopy(plain))["routed"] == 2

    def refused(*args, **kwargs):
        raise RuntimeError("at 54:60:\nNameError('Cannot access global variable LEFT_OUT from within @jit'ed function.')")

    for route, kernel in ((decode_gemv, "gemv"), (decode_attention, "decode_attention")):
        monkeypatch.setattr(kernel_route.launcher(torch, kernel), kernel, refused)
        model = copy.deepcopy(plain)
        said = route.route(torch, model)
        assert said["routed"] == 0 and "did not build or launch on cpu" in said["why"] and "RuntimeError: at 54:60:" in said["why"], said
        assert not any(getattr(m, decode_attention.MARK, False) or "forward" in vars(m) for m in model.modules()), kernel
        [engaged] = engagement([lever(kernel if kernel != "gemv" else "decode_gemv")],
                               {route.__name__.rsplit(".", 1)[1]: {**said, "kernel": 0, "fallbacks": {}}}, {}, {})
        assert not engaged.engaged and "did not build" in engaged.evidence


FAMILIES = {  # issue 65: the decode kernels on the families a user decodes with, not only Llama
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),  # q/k norms before the attention
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),  # biases on q/k/v
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 64}),
}


@in_fresh_interpreter
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_both_kernel_routes_decode_the_same_tokens_on_families_they_were_not_written_for(family):
    from hyperloom.tools.workload.worker.levers import decode_attention, decode_gemv

    transformers = pytest.importorskip("transformers")
    config_name, model_name, shape = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_name)(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                                num_attention_heads=4, num_key_value_heads=2, attn_implementation="sdpa", **shape)
    plain = getattr(transformers, model_name)(config).eval()
    plain.generation_config.cache_implementation, plain.generation_config.eos_token_id = "static", None
    routed, ids = copy.deepcopy(plain), torch.randint(0, 300, (1, 9))
    assert decode_attention.route(torch, routed)["routed"] == 2 and decode_gemv.route(torch, routed)["routed"] == 2 * 7
    attention, gemv = decode_attention.COUNTS.snapshot(), decode_gemv.COUNTS.snapshot()
    want, got = _generate(plain, ids), _generate(routed, ids)
    assert decode_attention.COUNTS.since(attention) == {"kernel": 4 * 2, "fallbacks": {"prefill": 2}}  # 4 decode steps x 2 layers
    # each decode step's 7 linears a layer, the down projection's with its activation folded; the prefill's GEMMs to torch
    assert decode_gemv.COUNTS.since(gemv) == {"kernel": 4 * 2 * 7, "fallbacks": {"a GEMM": 2 * 7}}
    assert torch.equal(got.sequences, want.sequences), family
    for mine, theirs in zip(got.logits, want.logits, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-4)
