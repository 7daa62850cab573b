"""The tolerance a hand-off draft suggests, from the output's dtype and the kind of op: a starting point declared before
any trial (ASSUMED, with the reason), which the user may tighten or loosen before tuning."""

from __future__ import annotations

from dataclasses import dataclass

from hyperloom.tools.gate.models import Tolerance

FP8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
LONG_SUMS = ("gemm", "attention", "reduction")  # sums over a long axis: the order of additions moves the last bits


@dataclass(frozen=True)
class Suggested:
    tolerance: Tolerance
    why: str


def suggest_tolerance(dtype: str, kind: str) -> Suggested:
    """For an output of `dtype` (numpy's name) computed by an op of class `kind` (gemm, normalization, elementwise, ...)."""
    if dtype in ("bfloat16", "float16") + FP8:
        if kind in LONG_SUMS:
            rtol = {"bfloat16": 1.6e-2, "float16": 2e-3}.get(dtype, 0.25)
            return Suggested(Tolerance(atol=rtol, rtol=rtol), f"{dtype} {kind}: a float32 accumulation in another order moves a "
                             f"result by a few of {dtype}'s ulps, and a sum that cancels to near zero by an absolute amount")
        return Suggested(Tolerance(atol=0.0, rtol=0.0, max_ulp=2), f"{dtype} {kind}: float32 inside, one rounding to {dtype} per "
                         "intermediate as the eager chain rounds; a float32 result a hair across a rounding boundary is 1 ulp, twice 2")
    if dtype in ("float32", "float64"):
        if kind in LONG_SUMS:
            return Suggested(Tolerance(atol=1e-4, rtol=1e-4), f"{dtype} {kind}: a long sum in another order (no TF32 assumed)")
        if kind == "normalization":
            return Suggested(Tolerance(atol=1e-5, rtol=1e-4), f"{dtype} {kind}: a row's sum in another order, then a reciprocal root")
        return Suggested(Tolerance(atol=1e-6, rtol=1e-5), f"{dtype} {kind}: elementwise math (exp, erf) in another library")
    return Suggested(Tolerance(atol=0.0, rtol=0.0), f"{dtype}: integers and copies compare exactly")
