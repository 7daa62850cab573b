"""kernels/decode: int4 packing, the exact references, the declared tolerances, bad input, the host twin."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import REPO
from kernel_modules import kernel_module
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.kernelspec.load import draw_inputs
from helpers import loaded_spec

packing = kernel_module("decode", "packing")
reference = kernel_module("decode", "reference")
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 6, "max_time_s": 0.5, "flush_cache": False}


def small(m=2, n=8, k=256, group=32):
    return {"m": m, "n": n, "k": k, "group": group, "threads": 4, "rows": 8}


def random_inputs(rng, shape, variant):
    m, n, k, group = shape["m"], shape["n"], shape["k"], shape["group"]
    inputs = {
        "w": rng.integers(0, 2**32, size=(n, k // 8), dtype=np.uint64).astype(np.uint32),
        "w_scales": rng.uniform(0.002, 0.02, size=(n, k // group)).astype(np.float16),
    }
    if variant == "w4a16":
        inputs["x"] = rng.standard_normal((m, k)).astype(np.float16)
    else:
        inputs["x_scales"] = rng.uniform(0.005, 0.05, size=(m, k // group)).astype(np.float32)
        inputs["x_q"] = (rng.integers(-127, 128, size=(m, k), dtype=np.int8) if variant == "w4a8"
                         else rng.integers(0, 2**32, size=(m, k // 8), dtype=np.uint64).astype(np.uint32))
    return inputs


@pytest.mark.parametrize("k_offset", range(8))
def test_each_k_offset_lands_in_the_documented_nibble(k_offset):
    codes = np.zeros((1, 8), dtype=np.int8)
    codes[0, k_offset] = -3  # 0b1101
    (word,) = packing.pack_int4(codes)[0]
    nibble = packing.NIBBLE_K.index(k_offset)
    assert int(word) == 0xD << (4 * nibble)
    byte, high = k_offset % 4, k_offset >= 4  # the layout the kernels read: byte b holds k = b (low) and b + 4 (high)
    assert 4 * nibble == 8 * byte + 4 * high
    assert packing.unpack_int4(np.array([[word]], dtype=np.uint32)).tolist() == codes.tolist()


def test_packing_round_trips_every_int4_value_at_every_position():
    rng = np.random.default_rng(1)
    codes = rng.integers(-8, 8, size=(5, 3, 64), dtype=np.int8)
    codes[0, 0, :16] = np.arange(-8, 8)
    words = packing.pack_int4(codes)
    assert words.dtype == np.uint32 and words.shape == (5, 3, 8)
    assert np.array_equal(packing.unpack_int4(words), codes)
    assert np.array_equal(packing.pack_int4(packing.unpack_int4(words)), words)


@pytest.mark.parametrize(
    ("codes", "message"),
    [(np.zeros(12, np.int8), "multiple of 8"), (np.full(8, 8, np.int16), "[-8, 7]"), (np.zeros(8, np.float32), "integers")],
)
def test_packing_refuses_what_it_cannot_represent(codes, message):
    with pytest.raises(HyperloomError, match=message.replace("[", r"\[").replace("]", r"\]")):
        packing.pack_int4(codes)


def test_weight_quantization_round_trips_within_half_a_step():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 256)).astype(np.float32)
    packed, scales = packing.quantize_weights(w, 32)
    back = packing.unpack_int4(packed).reshape(4, 8, 32) * scales.astype(np.float32)[..., None]
    assert np.all(np.abs(back.reshape(4, 256) - w) <= np.repeat(scales.astype(np.float32), 32, axis=1) * 0.5 + 1e-3)


def dequantized_float64(inputs, group):
    q = packing.unpack_int4(inputs["w"]).astype(np.float64)
    return q * np.repeat(inputs["w_scales"].astype(np.float64), group, axis=1)


def test_the_w4a16_reference_is_the_float64_product_of_fp16_rounded_weights():
    shape = small()
    inputs = random_inputs(np.random.default_rng(3), shape, "w4a16")
    y = reference.w4a16(inputs, shape)["y"]
    w = dequantized_float64(inputs, shape["group"])
    x = inputs["x"].astype(np.float64)
    exact16 = x @ w.astype(np.float16).astype(np.float64).T  # fl16(q·s), as the kernel dequantizes
    assert y.dtype == np.float32 and y.shape == (2, 8)
    assert np.allclose(y, exact16, rtol=1e-6, atol=1e-6)
    assert np.allclose(y, x @ w.T, rtol=0, atol=2e-3) and not np.allclose(y, x @ w.T, rtol=0, atol=1e-7)


@pytest.mark.parametrize("variant", ["w4a8", "w4a4"])
def test_the_integer_references_match_a_float64_dequantize_and_multiply(variant):
    shape = small(m=3, k=512, group=128)
    inputs = random_inputs(np.random.default_rng(4), shape, variant)
    y = getattr(reference, variant)(inputs, shape)["y"]
    codes = inputs["x_q"] if variant == "w4a8" else packing.unpack_int4(inputs["x_q"])
    x = codes.astype(np.float64) * np.repeat(inputs["x_scales"].astype(np.float64), shape["group"], axis=1)
    expected = x @ dequantized_float64(inputs, shape["group"]).T
    assert np.allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_the_integer_reference_is_exact_per_group_on_hand_made_codes():
    shape = small(m=1, n=1, k=64, group=32)
    q = np.tile(np.arange(-8, 8, dtype=np.int8), 4)[None]  # Σ q·x per group with x = 1 .. 32
    xq = np.arange(1, 65, dtype=np.int8)[None]
    inputs = {"w": packing.pack_int4(q), "w_scales": np.array([[1.0, 0.5]], np.float16),
              "x_q": xq, "x_scales": np.array([[1.0, 0.25]], np.float32)}
    sums = [int(np.dot(q[0, g * 32:(g + 1) * 32].astype(int), xq[0, g * 32:(g + 1) * 32].astype(int))) for g in range(2)]
    assert reference.w4a8(inputs, shape)["y"][0, 0] == np.float32(sums[0] * 1.0 + sums[1] * 0.5 * 0.25)


def sequential_fp32(terms):
    """The worst summation order the gate allows: one fp32 accumulator, term after term."""
    acc = np.zeros(terms.shape[:-1], np.float32)
    for i in range(terms.shape[-1]):
        acc = acc + terms[..., i]
    return acc


@pytest.mark.parametrize("name", ["w4a16", "w4a8", "w4a4"])
def test_the_declared_tolerance_covers_a_sequential_fp32_sum_at_the_longest_k(name):
    loaded = loaded_spec(REPO / "kernels" / "decode" / name)
    shape = dict(loaded.spec.shapes[2], n=16)  # k = 14336, 16 rows
    inputs = draw_inputs(loaded.spec, shape)
    y = getattr(reference, name)(inputs, shape)["y"]
    w = dequantized_float64(inputs, shape["group"])
    if name == "w4a16":
        terms = (inputs["x"].astype(np.float32)[:, None, :] * w.astype(np.float16).astype(np.float32)[None])
    else:
        codes = inputs["x_q"] if name == "w4a8" else packing.unpack_int4(inputs["x_q"])
        g = shape["group"]
        q = packing.unpack_int4(inputs["w"]).astype(np.int64).reshape(16, -1, g)
        isum = np.einsum("ngk,mgk->mng", q, codes.astype(np.int64).reshape(shape["m"], -1, g))
        terms = (isum.astype(np.float32) * inputs["w_scales"].astype(np.float32)[None]) * inputs["x_scales"][:, None, :]
    error = np.abs(sequential_fp32(terms) - y).max()
    tol = loaded.spec.tolerance
    assert error <= tol.atol / 2, f"sequential fp32 error {error:.2e} leaves too little margin under atol {tol.atol}"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shape": {"k": 272}}, "not a multiple of the group size 32"),
        ({"w_scales": np.zeros((8, 4), np.float16)}, "w_scales has shape"),
        ({"w_scales": np.zeros((8, 8), np.float32)}, "w_scales has dtype float32, expected float16"),
        ({"x": np.zeros((2, 256), np.float32)}, "x has dtype float32"),
        ({"w": np.zeros((8, 32), np.int32)}, "w has dtype int32"),
        ({"shape": {"threads": 6}}, "not a valid decode launch"),
        ({"shape": {"threads": 128, "rows": 4}}, "not a valid decode launch"),
        ({"shape": {"threads": 4, "rows": 3}}, "multiple of 32"),
        ({"shape": {"m": 9}}, "outside 1..8"),
        ({"shape": {"group": 48}}, "group size 48 is not supported"),
    ],
)
def test_bad_shapes_and_dtypes_are_named_before_any_launch(change, message):
    shape = small()
    inputs = random_inputs(np.random.default_rng(5), shape, "w4a16")
    shape.update(change.pop("shape", {}))
    inputs.update(change)
    with pytest.raises(HyperloomError, match=message):
        reference.w4a16(inputs, shape)


def test_int4_weights_dominate_the_error_until_the_activations_are_int4_too():
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((64, 1024)) * 0.02).astype(np.float32)
    x = rng.standard_normal((2, 1024)).astype(np.float32)
    errors = reference.quantization_error(w, x, 128)
    assert 0.05 < errors["w4a16"] < 0.2 and abs(errors["w4a8"] / errors["w4a16"] - 1) < 0.05
    assert errors["w4a4"] > 1.3 * errors["w4a16"]


def decode_workspace(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    return workspace


def test_the_host_twin_of_w4a16_passes_its_gate_through_bench(workspace):
    result = run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, **QUICK), decode_workspace(workspace))
    assert result.ok, result.summary
    assert [v.input_set for v in result.gate] == ["seeded", "zeros", "ones"] and all(v.passed for v in result.gate)
    assert result.bytes_moved == 100 * 256 // 2 + 2 * 100 * 8 + 2 * 3 * 256


def test_bench_takes_a_tune_winners_parameters_and_says_which_it_used(workspace):
    params = {"threads": 8, "rows": 4, "UNUSED_DEFINE": 1}
    result = run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, adversarial=False, params=params, **QUICK),
                       decode_workspace(workspace))
    assert result.ok and result.params == params and result.shape["threads"] == 8 and result.shape["rows"] == 4
    with pytest.raises(HyperloomError, match="changes argument"):
        run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, params={"n": 64}, **QUICK), workspace)


def test_a_host_twin_that_reads_the_nibbles_in_natural_order_fails_the_gate(workspace):
    source = decode_workspace(workspace).root / "decode" / "w4a16.c"
    text = source.read_text()
    wrong = text.replace("return e < 4 ? (int32_t)(w << (28 - 8 * e)) >> 28 : (int32_t)(w << (24 - 8 * (e - 4))) >> 28;",
                         "return (int32_t)(w << (28 - 4 * e)) >> 28;")
    assert wrong != text
    source.write_text(wrong)
    result = run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, adversarial=False, **QUICK), workspace)
    assert not result.ok and "seeded" in result.summary


def test_a_spec_shape_that_breaks_the_group_fails_before_the_launch(workspace):
    spec = decode_workspace(workspace).root / "decode" / "w4a16" / "kernel.yaml"
    spec.write_text(spec.read_text().replace("{m: 3, n: 100, k: 256, group: 32", "{m: 3, n: 100, k: 272, group: 32"))
    with pytest.raises(HyperloomError, match="k = 272 is not a multiple of the group size 32"):
        run_bench(BenchRequest(spec="decode/w4a16", variant="host", target="host", shape=6, **QUICK), workspace)


@pytest.mark.parametrize("name", ["w4a16", "w4a8", "w4a4"])
def test_every_decode_spec_carries_the_five_shapes_at_batch_one(name):
    spec = loaded_spec(REPO / "kernels" / "decode" / name).spec
    five = [(s["n"], s["k"]) for s in spec.shapes if s["m"] == 1]
    assert five[:5] == [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (128256, 4096)]
    assert any(s["m"] == 8 for s in spec.shapes)
