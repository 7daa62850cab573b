"""The chunked, two-pass gate agrees with a plain float64 oracle on random adversarial data."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import gate
from hyperloom.tools.gate import check


def _key(value: np.floating) -> int:
    bits = int(np.array(value).view(f"u{value.dtype.itemsize}"))
    sign = bits >> (8 * value.dtype.itemsize - 1)
    magnitude = bits & ((1 << (8 * value.dtype.itemsize - 1)) - 1)
    return -magnitude if sign else magnitude


def oracle_mismatches(c, r, atol, rtol, max_ulp, policy) -> np.ndarray:
    """The rule as the docs state it, element by element, with Python integers for ULPs."""
    out = []
    for i, (x, y) in enumerate(zip(c.ravel(), r.ravel())):
        fx, fy = float(x), float(y)
        if np.isnan(fx) or np.isnan(fy):
            ok = policy == "match" and np.isnan(fx) and np.isnan(fy)
        elif np.isinf(fx) or np.isinf(fy):
            ok = fx == fy
        else:
            ok = abs(fx - fy) <= atol + rtol * abs(fy)
            if max_ulp is not None and c.dtype.kind == "f":
                ok = ok or abs(_key(x) - _key(y)) <= max_ulp
        if not ok:
            out.append(i)
    return np.array(out, dtype=np.int64)


def adversarial_pair(rng: np.random.Generator, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    info = np.finfo(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return _pair(rng, n, dtype, info)


def _pair(rng: np.random.Generator, n: int, dtype, info) -> tuple[np.ndarray, np.ndarray]:
    ref = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype)
    noise = rng.standard_normal(n) * np.abs(ref.astype(np.float64)) * 10.0 ** rng.integers(-8, 0, n)
    cand = (ref.astype(np.float64) + noise).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.max, info.tiny], dtype)
    for target in (ref, cand):
        spots = rng.choice(n, size=n // 20, replace=False)
        target[spots] = rng.choice(specials, size=spots.size)
    same = rng.choice(n, size=n // 10, replace=False)
    cand[same] = ref[same]
    steps = rng.choice(n, size=n // 10, replace=False)
    cand[steps] = np.nextafter(ref[steps], np.array(np.inf, dtype))
    return cand, ref


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_the_gate_matches_the_oracle_on_every_element(workspace, monkeypatch, dtype, seed):
    monkeypatch.setattr(check, "CHUNK_ELEMENTS", 777)  # many chunks, merged out of order
    rng = np.random.default_rng(seed)
    cand, ref = adversarial_pair(rng, 5000, dtype)
    atol = [0.0, 1e-6, 1e-3][seed % 3]
    rtol = [0.0, 1e-3, 1e-5, 0.5][seed]
    max_ulp = [None, 0, 3, 1000][seed]
    policy = ["forbid", "match"][seed % 2]
    expected = oracle_mismatches(cand, ref, atol, rtol, max_ulp, policy)
    result = gate(workspace, cand, ref, atol=atol, rtol=rtol, max_ulp=max_ulp, nan_policy=policy, max_reported_mismatches=25)
    case = result.cases[0]
    assert case.mismatches == expected.size
    assert [m.index[0] for m in case.first_mismatches] == expected[:25].tolist()
    assert case.nan_count.candidate == int(np.isnan(cand).sum()) and case.inf_count.reference == int(np.isinf(ref).sum())
    finite = np.isfinite(cand) & np.isfinite(ref)
    diff = np.abs(cand[finite].astype(np.float64) - ref[finite].astype(np.float64))
    assert case.max_abs_error == pytest.approx(diff.max(), rel=1e-6)
    assert case.max_ulp == max(abs(_key(x) - _key(y)) for x, y in zip(cand[finite], ref[finite]))


def test_integer_gate_matches_the_oracle(workspace, monkeypatch):
    monkeypatch.setattr(check, "CHUNK_ELEMENTS", 100)
    rng = np.random.default_rng(7)
    ref = rng.integers(-1000, 1000, 2000).astype(np.int16)
    cand = ref + rng.integers(-3, 4, 2000).astype(np.int16)
    expected = oracle_mismatches(cand, ref, 1.0, 0.001, None, "forbid")
    case = gate(workspace, cand, ref, atol=1.0, rtol=0.001).cases[0]
    assert case.mismatches == expected.size and case.first_mismatches[0].index == [int(expected[0])]


def test_fortran_ordered_files_report_indices_in_their_own_shape(workspace, monkeypatch):
    monkeypatch.setattr(check, "CHUNK_ELEMENTS", 5)
    ref = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    cand = ref.copy(order="F")
    cand[3, 1] = -1
    for c, r in ((cand, ref), (np.ascontiguousarray(cand), ref), (cand, np.ascontiguousarray(ref))):
        case = gate(workspace, c, r).cases[0]
        assert case.mismatches == 1 and case.first_mismatches[0].index == [3, 1]


def test_big_endian_files_compare_by_value(workspace):
    ref = np.linspace(0, 1, 50).astype(">f4")
    cand = ref.astype("<f4")
    cand[7] += 1
    case = gate(workspace, cand, ref).cases[0]
    assert case.mismatches == 1 and case.first_mismatches[0].index == [7]
