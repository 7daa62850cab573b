"""The numpy reference: exact integer sums, the analytic bound on random and adversarial data, every edge input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import save
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.api import run_allreduce
from hyperloom.tools.allreduce.dtypes import bf16_bits_to_float32, float32_to_bf16_bits
from hyperloom.tools.allreduce.models import AllreduceRequest
from hyperloom.tools.allreduce.quantize import error_bound, padded_length, shared_scales
from hyperloom.tools.allreduce.reference import Scheme, reference_allreduce
from hyperloom.tools.allreduce.ring import ring_allreduce


def within(values: list[np.ndarray], scheme: Scheme, out_dtype: str = "float32") -> float:
    """Run the reference; assert every rank has the same bits and the error is within the bound; return the bound's use."""
    outcome = reference_allreduce(values, scheme)
    assert all(r.tobytes() == outcome.results[0].tobytes() for r in outcome.results)
    exact = np.sum([v.astype(np.float64) for v in values], axis=0)
    error = np.abs(outcome.results[0].astype(np.float64) - exact)
    bound = np.repeat(error_bound(outcome.scales, len(values), outcome.q_max, scheme.rounding, out_dtype), scheme.block)[: exact.size]
    assert np.all(error <= bound), f"error {error.max()} over bound at {np.argmax(error - bound)}"
    return float((error / bound).max())


@pytest.mark.parametrize("ranks", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("partial_sums", ["fit_int6", "widen"])
@pytest.mark.parametrize("rounding", ["nearest", "stochastic"])
def test_random_data_stays_within_the_analytic_bound(ranks, partial_sums, rounding):
    rng = np.random.default_rng(ranks)
    values = [(rng.standard_normal(3001) * rng.uniform(0.1, 10)).astype(np.float32) for _ in range(ranks)]
    assert within(values, Scheme(block=64, rounding=rounding, seed=7, partial_sums=partial_sums)) > 0.3


@pytest.mark.parametrize("ranks", [1, 2, 4])
@pytest.mark.parametrize("partial_sums", ["fit_int6", "widen"])
def test_errors_that_all_round_the_same_way_nearly_reach_the_bound_but_not_past_it(ranks, partial_sums):
    """Every rank sits just under a half step, so N rounding errors add up: the bound must be tight and hold."""
    scheme = Scheme(block=32, partial_sums=partial_sums)
    q_max = 31 if partial_sums == "widen" else 31 // ranks
    steps = np.random.default_rng(0).integers(-q_max, q_max, 32 * 50)
    x = ((steps + 0.4999) / q_max).astype(np.float32)
    x[::32] = 1.0  # each block's amax: the scale is 1/Q
    assert within([x.copy() for _ in range(ranks)], scheme) > 0.99


def test_ring_sums_equal_the_plain_integer_sum_on_every_rank():
    rng = np.random.default_rng(1)
    for ranks, q_max in ((2, 15), (3, 31), (8, 31), (8, 3)):
        codes = [rng.integers(-q_max, q_max + 1, 4 * ranks * 37).astype(np.int8) for _ in range(ranks)]
        outcome = ring_allreduce(codes, q_max)
        total = np.sum([c.astype(np.int64) for c in codes], axis=0)
        assert all(np.array_equal(s, total) for s in outcome.sums)
        assert len(set(outcome.bytes_sent)) == 1


def test_fit_int6_sends_int6_on_every_step_and_widen_widens_only_when_sums_need_it():
    x = [np.ones(1024, np.float32)] * 8
    assert set(reference_allreduce(x, Scheme(partial_sums="fit_int6")).formats) == {"int6"}
    assert reference_allreduce(x, Scheme(partial_sums="widen")).formats == ["int6"] + ["int8"] * 3 + ["int16"] * 10
    outcome = reference_allreduce(x[:2], Scheme(block=128))
    chunk = 1024 // 2
    assert outcome.wire_bytes == [2 * chunk * 3 // 4 + 2 * (8 + 2) // 2 * 4] * 2  # two int6 chunks + the scale exchange


def test_stochastic_rounding_is_unbiased_and_seeded():
    x = np.full(200_000, 0.3, np.float32)
    x[::100] = 1.0  # scale 1/31 with two ranks under widen
    scheme = Scheme(block=100, rounding="stochastic", seed=11, partial_sums="widen")
    first = reference_allreduce([x, x], scheme).results[0]
    assert np.array_equal(first, reference_allreduce([x, x], scheme).results[0])
    other = reference_allreduce([x, x], Scheme(block=100, rounding="stochastic", seed=12, partial_sums="widen")).results[0]
    assert not np.array_equal(first, other)
    mask = x != 1.0
    assert abs(first[mask].mean() - 0.6) < 2e-3  # nearest rounding would give 9/31·2 = 0.5806
    assert abs(reference_allreduce([x, x], Scheme(block=100, partial_sums="widen")).results[0][mask].mean() - 0.6) > 0.015


def test_scales_cover_the_block_maximum_even_where_division_rounds_down_or_underflows():
    amax = np.array([1.0, 3.0e-45, 1.4e-45, 1e-40, 3.4e38, 0.0, 7.0, 0.1], np.float32)
    for q_max in (1, 3, 7, 10, 15, 31):
        s = shared_scales(amax, q_max)
        assert np.all(s.astype(np.float64) * q_max >= amax.astype(np.float64))
        smaller = np.nextafter(s, np.float32(0))
        assert np.all((smaller.astype(np.float64) * q_max < amax) | (s == 0))  # and it is the smallest such
    assert shared_scales(np.zeros(1, np.float32), 31)[0] == 0


def test_all_zeros_reduce_to_exact_zeros():
    outcome = reference_allreduce([np.zeros(37, np.float32)] * 3, Scheme())
    assert all(np.array_equal(r, np.zeros(37, np.float32)) for r in outcome.results)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_rank_with_nan_or_inf_is_an_error_naming_it(bad):
    values = [np.ones(10, np.float32), np.ones(10, np.float32)]
    values[1][3] = bad
    with pytest.raises(HyperloomError, match=r"non-finite.*rank 1: 1\)"):
        reference_allreduce(values, Scheme())
    with pytest.raises(HyperloomError, match=r"rank 0: 10, rank 1: 1"):
        reference_allreduce([np.full(10, np.nan, np.float32), values[1]], Scheme())


def test_denormal_inputs_keep_their_values_within_the_bound():
    rng = np.random.default_rng(2)
    values = [(rng.uniform(-1, 1, 999) * 2.0**-128).astype(np.float32) for _ in range(2)]
    assert np.all(np.abs(values[0]) < np.finfo(np.float32).smallest_normal)
    within(values, Scheme(block=16))
    outcome = reference_allreduce(values, Scheme(block=16))
    assert np.count_nonzero(outcome.results[0]) > 900


@pytest.mark.parametrize("length", [1, 3, 5, 127, 129, 1001])
@pytest.mark.parametrize("block", [1, 3, 128])
def test_lengths_that_are_not_multiples_of_four_or_the_block_work(length, block):
    rng = np.random.default_rng(length)
    values = [rng.standard_normal(length).astype(np.float32) for _ in range(3)]
    outcome = reference_allreduce(values, Scheme(block=block))
    assert outcome.results[0].shape == (length,)
    within(values, Scheme(block=block))
    assert padded_length(length, 3) % 12 == 0


def test_one_rank_sends_nothing_and_returns_its_own_quantized_input():
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    outcome = reference_allreduce([x], Scheme())
    assert outcome.wire_bytes == [0] and outcome.formats == [] and outcome.q_max == 31
    assert within([x], Scheme()) > 0.5


def test_fit_int6_refuses_more_than_31_ranks_and_widen_takes_them():
    values = [np.ones(8, np.float32)] * 32
    with pytest.raises(HyperloomError, match="widen"):
        reference_allreduce(values, Scheme(partial_sums="fit_int6"))
    assert within(values, Scheme(partial_sums="widen")) < 1
    assert reference_allreduce(values, Scheme(partial_sums="widen")).results[0] == pytest.approx([32.0] * 8, rel=1e-6)


def test_bfloat16_rounding_matches_torch_on_every_kind_of_value():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    ours = float32_to_bf16_bits(x)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(bf16_bits_to_float32(theirs), torch.from_numpy(theirs.view(np.int16)).view(torch.bfloat16).float().numpy())


# ---------------------------------------------------------------- through the tool


def test_the_tool_writes_the_result_and_reports_statistics(workspace):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((64, 33)).astype(np.float16) for _ in range(2)]
    paths = [save(workspace, f"r{i}.npy", a) for i, a in enumerate(arrays)]
    result = run_allreduce(AllreduceRequest(inputs=paths, out="sums/out.npy"), workspace)
    written = np.load(workspace.root / "sums/out.npy")
    assert written.dtype == np.float16 and written.shape == (64, 33) and result.out == "sums/out.npy"
    exact = arrays[0].astype(np.float64) + arrays[1].astype(np.float64)
    assert result.max_abs_error == pytest.approx(float(np.abs(written - exact).max()))
    assert result.within_bound and result.bit_identical_across_ranks and result.cross_rank_drift == 0
    assert result.code_bound == 15 and result.blocks == 17 and result.matches_reference is None
    assert (2.4 < result.wire.compression_vs_fp16 < 2.6
            and result.wire.compression_vs_fp32 == pytest.approx(2 * result.wire.compression_vs_fp16))
    assert result.wire.wire_ratio_vs_fp16 > 2.3 and result.evidence.tag.value == "MEASURED"
    assert result.evidence.toolchain["numpy"] == np.__version__


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("distribution", ["normal", "uniform", "outliers", "denormal", "zeros"])
def test_generated_inputs_of_every_dtype_and_distribution_stay_within_bound(workspace, dtype, distribution):
    result = run_allreduce(AllreduceRequest(ranks=3, shape=[7, 45], dtype=dtype, distribution=distribution, seed=9), workspace)
    assert result.within_bound and result.bit_identical_across_ranks, result.summary
    stored = np.load(workspace.root / result.out)
    assert stored.dtype == (np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
    if distribution == "zeros":
        assert result.max_abs_error == 0 and result.max_rel_error is None


def test_a_huge_dynamic_range_inside_a_block_is_reported_as_precision_lost(workspace):
    result = run_allreduce(AllreduceRequest(ranks=2, shape=[4096], distribution="wide_range"), workspace)
    assert result.within_bound and result.inputs_quantized_to_zero > 0.8 * result.nonzero_inputs
    assert "became 0" in result.precision_note and "smaller block" in result.precision_note
    normal = run_allreduce(AllreduceRequest(ranks=2, shape=[4096]), workspace)
    assert 0 < normal.inputs_quantized_to_zero < 0.1 * normal.nonzero_inputs  # |x| < amax/30 of a normal block
    ones = save(workspace, "ones.npy", np.linspace(1, 2, 4096, dtype=np.float32))
    assert run_allreduce(AllreduceRequest(inputs=[ones, ones]), workspace).precision_note is None


def test_shapes_or_dtypes_that_differ_across_ranks_are_refused(workspace):
    a = save(workspace, "a.npy", np.ones(8, np.float32))
    b = save(workspace, "b.npy", np.ones(9, np.float32))
    c = save(workspace, "c.npy", np.ones(8, np.float16))
    with pytest.raises(HyperloomError, match=r"differ in shape.*rank 1: float32 \[9\]"):
        run_allreduce(AllreduceRequest(inputs=[a, b]), workspace)
    with pytest.raises(HyperloomError, match="rank 1: float16"):
        run_allreduce(AllreduceRequest(inputs=[a, c]), workspace)


def test_a_sum_that_overflows_float16_is_an_error_not_infinity(workspace):
    big = save(workspace, "big.npy", np.full(4, 60000, np.float16))
    with pytest.raises(HyperloomError, match="overflows float16"):
        run_allreduce(AllreduceRequest(inputs=[big, big]), workspace)


def test_bfloat16_bits_need_the_flag_and_void_arrays_from_ml_dtypes_are_read(workspace):
    bits = float32_to_bf16_bits(np.linspace(-3, 3, 40, dtype=np.float32))
    plain = save(workspace, "bits.npy", bits)
    void = save(workspace, "void.npy", bits.view("V2"))
    with pytest.raises(HyperloomError, match="bfloat16_bits=true"):
        run_allreduce(AllreduceRequest(inputs=[plain, plain]), workspace)
    result = run_allreduce(AllreduceRequest(inputs=[plain, void], bfloat16_bits=True), workspace)
    assert result.dtype == "bfloat16" and result.within_bound
    summed = bf16_bits_to_float32(np.load(workspace.root / result.out))
    assert np.abs(summed - 2 * np.linspace(-3, 3, 40)).max() <= result.error_bound_abs


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "no inputs"),
        ({"ranks": 2}, "no inputs"),
        ({"ranks": 2, "shape": [0, 3]}, "1.."),
        ({"ranks": 2, "shape": [1 << 14, 1 << 13]}, "smaller product"),
        ({"inputs": ["a.npy"], "ranks": 2, "shape": [3]}, "not both"),
        ({"inputs": ["../a.npy"]}, "outside the workspace"),
        ({"inputs": ["missing.npy"]}, "does not exist"),
        ({"ranks": 2, "shape": [4], "out": "result.txt"}, "not a .npy"),
        ({"ranks": 2, "shape": [4], "out": "/tmp/elsewhere.npy"}, "outside the workspace"),
    ],
)
def test_bad_requests_are_errors_with_a_next_step(workspace, arguments, message):
    save(workspace, "a.npy", np.ones(4, np.float32))
    with pytest.raises(HyperloomError, match="Next step") as caught:
        run_allreduce(AllreduceRequest(**arguments), workspace)
    assert message in str(caught.value)


def test_float64_and_integer_inputs_are_refused_with_what_to_do(workspace):
    for name, array in (("f64.npy", np.ones(4)), ("i32.npy", np.ones(4, np.int32))):
        path = save(workspace, name, array)
        with pytest.raises(HyperloomError, match="cast to float32"):
            run_allreduce(AllreduceRequest(inputs=[path, path]), workspace)
