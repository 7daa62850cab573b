"""The gate's element rule, special values and statistics, case by case."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import gate, save
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest

F32 = np.float32
NAN, INF = float("nan"), float("inf")


def test_identical_arrays_pass_bit_exact(workspace):
    x = np.random.default_rng(0).standard_normal(1000).astype(F32)
    result = gate(workspace, x, x)
    assert result.passed and result.cases[0].mismatches == 0
    assert result.cases[0].max_abs_error == 0.0 and result.cases[0].max_ulp == 0


def test_an_element_exactly_on_the_tolerance_boundary_passes_and_one_ulp_beyond_fails(workspace):
    # |c - r| = 2^-10 = rtol * |r| exactly, all values representable in float32.
    assert gate(workspace, np.array([1 + 2**-10], F32), np.array([1.0], F32), rtol=2**-10).passed
    beyond = np.nextafter(F32(1 + 2**-10), F32(2))
    assert not gate(workspace, np.array([beyond], F32), np.array([1.0], F32), rtol=2**-10).passed


@pytest.mark.parametrize("policy", ["forbid", "match"])
def test_nan_in_the_candidate_only_fails_under_either_policy(workspace, policy):
    result = gate(workspace, np.array([1, NAN, 3], F32), np.array([1, 2, 3], F32), atol=1.0, nan_policy=policy)
    assert not result.passed
    case = result.cases[0]
    assert case.mismatches == 1 and case.nan_count.candidate == 1 and case.nan_count.reference == 0
    assert case.first_mismatches[0].index == [1] and case.first_mismatches[0].candidate == "nan"


def test_nan_in_both_fails_when_forbidden_and_passes_when_matched(workspace):
    cand, ref = np.array([NAN, 1], F32), np.array([NAN, 1], F32)
    assert not gate(workspace, cand, ref, nan_policy="forbid").passed
    matched = gate(workspace, cand, ref, nan_policy="match")
    assert matched.passed and matched.cases[0].nan_count.candidate == 1


def test_nan_in_the_reference_only_fails_under_match(workspace):
    assert not gate(workspace, np.array([1.0], F32), np.array([NAN], F32), atol=1e9, nan_policy="match").passed


def test_nan_at_different_positions_fails_under_match(workspace):
    result = gate(workspace, np.array([NAN, 1], F32), np.array([1, NAN], F32), nan_policy="match")
    assert result.cases[0].mismatches == 2


def test_infinities_must_match_in_sign_and_position(workspace):
    assert gate(workspace, np.array([INF, -INF, 1], F32), np.array([INF, -INF, 1], F32)).passed
    assert not gate(workspace, np.array([INF], F32), np.array([-INF], F32), atol=1e30).passed
    assert not gate(workspace, np.array([INF], F32), np.array([1.0], F32), atol=1e30, rtol=1e30).passed
    assert not gate(workspace, np.array([3e38], F32), np.array([INF], F32), atol=1e30, rtol=1.0).passed


def test_the_largest_finite_float_is_not_within_any_ulp_budget_of_infinity(workspace):
    fmax = np.finfo(F32).max
    result = gate(workspace, np.array([fmax], F32), np.array([INF], F32), max_ulp=10)
    assert not result.passed and result.cases[0].inf_count.reference == 1


def test_negative_zero_equals_positive_zero(workspace):
    result = gate(workspace, np.array([-0.0, 0.0], F32), np.array([0.0, -0.0], F32))
    assert result.passed and result.cases[0].max_ulp == 0


def test_a_denormal_differs_from_zero_by_one_ulp(workspace):
    tiny = np.finfo(F32).smallest_subnormal
    strict = gate(workspace, np.array([tiny], F32), np.array([0.0], F32))
    assert not strict.passed and strict.cases[0].max_ulp == 1
    assert gate(workspace, np.array([tiny], F32), np.array([0.0], F32), max_ulp=1).passed
    assert gate(workspace, np.array([tiny * 3], F32), np.array([tiny], F32), atol=float(tiny) * 2).passed


def test_denormal_thresholds_never_round_in_the_candidates_favour(workspace):
    # rtol*|r| = 0.75 * smallest subnormal: float32 would round it up to one subnormal step.
    tiny = float(np.finfo(F32).smallest_subnormal)
    result = gate(workspace, np.array([2 * tiny], F32), np.array([tiny], F32), rtol=0.75)
    assert not result.passed


def test_ulp_allowance_accepts_what_the_absolute_rule_rejects(workspace):
    ref = np.array([1e30, -1e-30], F32)
    cand = np.array([np.nextafter(F32(1e30), F32(INF)), np.nextafter(F32(-1e-30), F32(0))], F32)
    assert not gate(workspace, cand, ref).passed
    result = gate(workspace, cand, ref, max_ulp=1)
    assert result.passed and result.cases[0].max_ulp == 1


def test_ulps_across_zero_count_both_sides(workspace):
    tiny = np.finfo(F32).smallest_subnormal
    result = gate(workspace, np.array([-tiny], F32), np.array([tiny], F32), max_ulp=1)
    assert not result.passed and result.cases[0].max_ulp == 2


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_widths_measure_ulps_in_their_own_precision(workspace, dtype):
    one = np.array([1.0], dtype)
    next_up = np.nextafter(one, np.array([2.0], dtype))
    result = gate(workspace, next_up, one, max_ulp=1)
    assert result.passed and result.cases[0].max_ulp == 1
    assert not gate(workspace, next_up, one).passed


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_integers_compare_exactly_unless_a_tolerance_is_declared(workspace, dtype):
    ref = np.array([0, 1, 100], dtype)
    cand = np.array([0, 2, 100], dtype)
    strict = gate(workspace, cand, ref)
    assert not strict.passed and strict.cases[0].mismatches == 1 and strict.cases[0].max_ulp is None
    assert strict.cases[0].first_mismatches[0].candidate == 2
    assert gate(workspace, cand, ref, atol=1).passed


def test_extreme_64_bit_integers_do_not_overflow_the_difference(workspace):
    info = np.iinfo(np.int64)
    result = gate(workspace, np.array([info.max], np.int64), np.array([info.min], np.int64))
    assert not result.passed and result.cases[0].max_abs_error == pytest.approx(2.0**64)
    unsigned = gate(workspace, np.array([2**64 - 1], np.uint64), np.array([0], np.uint64), atol=1.0)
    assert unsigned.cases[0].max_abs_error == pytest.approx(2.0**64)


def test_booleans_compare_exactly(workspace):
    assert gate(workspace, np.array([True, False]), np.array([True, False])).passed
    assert not gate(workspace, np.array([True, True]), np.array([True, False])).passed


def test_a_shape_mismatch_is_a_failing_verdict_with_its_reason(workspace):
    result = gate(workspace, np.zeros((2, 3), F32), np.zeros((3, 2), F32))
    case = result.cases[0]
    assert not result.passed and "shape mismatch" in case.reason and "[2, 3]" in case.reason
    assert case.elements == 0 and case.candidate_sha256 != case.reference_sha256


def test_a_dtype_mismatch_is_a_failing_verdict_with_its_reason(workspace):
    result = gate(workspace, np.zeros(4, np.float16), np.zeros(4, F32))
    assert not result.passed and "dtype mismatch" in result.cases[0].reason and "float16" in result.cases[0].reason


def test_empty_arrays_pass_with_no_statistics(workspace):
    result = gate(workspace, np.zeros((0, 4), F32), np.zeros((0, 4), F32))
    case = result.cases[0]
    assert result.passed and case.elements == 0 and case.max_abs_error is None and case.max_ulp is None


def test_a_zero_dimensional_array_is_one_element(workspace):
    result = gate(workspace, np.array(2.0, F32), np.array(1.0, F32))
    assert not result.passed and result.cases[0].first_mismatches[0].index == []


def test_relative_error_leaves_out_zero_references(workspace):
    result = gate(workspace, np.array([0.5, 2.2], F32), np.array([0.0, 2.0], F32), atol=1.0)
    assert result.passed and result.cases[0].max_rel_error == pytest.approx(0.1, rel=1e-6)
    only_zero = gate(workspace, np.array([0.5], F32), np.array([0.0], F32), atol=1.0)
    assert only_zero.cases[0].max_rel_error is None


def test_a_huge_relative_error_is_reported_finite_even_when_float32_overflows(workspace):
    tiny = float(np.finfo(F32).smallest_subnormal)
    result = gate(workspace, np.array([1e-3], F32), np.array([tiny], F32), atol=1.0)
    assert result.passed and result.cases[0].max_rel_error == pytest.approx(1e-3 / tiny, rel=1e-6)


def test_several_cases_pass_only_if_all_pass(workspace):
    a = save(workspace, "a.npy", np.ones(3, F32))
    b = save(workspace, "b.npy", np.ones(3, F32) * 2)
    result = run_gate(
        GateRequest(candidates=[a, b], references=[a, a], atol=0, rtol=0, case_names=["same", "double"]), workspace
    )
    assert not result.passed and [c.passed for c in result.cases] == [True, False]
    assert "double" in result.summary


def test_inline_lists_take_the_dtype_of_the_file_on_the_other_side(workspace):
    ref = save(workspace, "ref.npy", np.array([[1, 2], [3, 4]], np.int32))
    result = run_gate(GateRequest(candidates=[[[1, 2], [3, 5]]], references=[ref], atol=0, rtol=0), workspace)
    assert result.cases[0].candidate_dtype == "int32" and result.cases[0].first_mismatches[0].index == [1, 1]


def test_inline_non_finite_values_are_written_as_strings(workspace):
    result = run_gate(
        GateRequest(candidates=[["nan", "-inf", 1]], references=[["NaN", "-inf", 1]], atol=0, rtol=0, nan_policy="match"),
        workspace,
    )
    assert result.passed and result.cases[0].candidate_dtype == "float64"


def test_the_evidence_names_the_tool_the_target_and_every_input(workspace):
    x = np.arange(4, dtype=F32)
    first = gate(workspace, x, x, target="gfx1201")
    assert first.evidence.tag.value == "MEASURED" and first.evidence.target == "gfx1201"
    assert first.evidence.source.startswith("hyperloom.correctness_gate ") and "numpy" in first.evidence.toolchain
    assert first.evidence.at.utcoffset().total_seconds() == 0
    looser = gate(workspace, x, x, atol=1.0)
    assert looser.evidence.inputs_sha256 != first.evidence.inputs_sha256  # the tolerance is an input
