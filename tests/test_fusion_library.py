"""The fusion kernel library (issue 31, item 3), kernels/triton/: each spec passes spec_check and its own gate in Triton's
interpreter at a width that is no power of two, a wrong kernel is rejected, each launcher matches the eager torch code
it replaces on float32, float16 and bfloat16 tensors, and each spec builds offline for AMD with its resource usage."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import REPO
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.kernelspec.load import load_spec
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.launch import prepare
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.spec.models import SpecCheckRequest

HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (pip install 'hyperloom[triton]')")
needs_interpreter = pytest.mark.skipif(not (HAS_TRITON and HAS_TORCH), reason="Triton's interpreter needs triton and torch")
LIBRARY = REPO / "kernels" / "triton"
KERNELS = ["rmsnorm", "add_rmsnorm", "layernorm", "silu_and_mul", "gelu_and_mul", "rotary"]


def _copy(workspace, name: str) -> Path:  # type: ignore[no-untyped-def]
    folder = workspace.root / name
    shutil.copytree(LIBRARY / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


# --- the specs, gated in the interpreter --------------------------------------------------------------------------

@needs_interpreter
@pytest.mark.parametrize("name", KERNELS)
def test_each_library_spec_passes_spec_check_and_its_gate_in_the_interpreter_at_a_width_that_is_no_power_of_two(workspace, name):
    _copy(workspace, name)
    checked = run_spec_check(SpecCheckRequest(spec=name), workspace)
    assert checked.ok, [(p.path, p.cause) for p in checked.problems if p.severity == "error"]
    shape = load_spec(workspace.root / name, workspace).shape(0)
    assert any(v & (v - 1) for k, v in shape.items() if k in ("cols", "d", "dim", "heads")), shape
    result = run_bench(BenchRequest(spec=name, target="host", shape=0), workspace)
    assert [v.input_set for v in result.gate] == ["seeded", "zeros", "ones"]
    assert all(v.passed for v in result.gate), [v.summary for v in result.gate]


@needs_interpreter
@pytest.mark.parametrize(("name", "line", "wrong"), [
    # the last chunk's squares left out
    ("rmsnorm", "for start in range(0, n_cols, BLOCK):\n        mask", "for start in range(0, n_cols - BLOCK, BLOCK):\n        mask"),
    ("add_rmsnorm", "        tl.store(r_row + start + columns, total, mask=mask)\n",
     "        tl.store(r_row + start + columns, b.to(total.dtype), mask=mask)\n"),
    ("rotary", "(-x2 * sin1)", "(x2 * sin1)"),
])
def test_the_interpreter_gate_rejects_a_wrong_library_kernel(workspace, name, line, wrong):
    folder = _copy(workspace, name)
    source = folder / f"{name}.py"
    text = source.read_text()
    assert line in text
    source.write_text(text.replace(line, wrong))
    result = run_bench(BenchRequest(spec=name, target="host", shape=0, adversarial=False), workspace)
    assert [v.passed for v in result.gate] == [False], [v.summary for v in result.gate]


# --- offline AMD builds --------------------------------------------------------------------------------------------

@needs_triton
@pytest.mark.parametrize(("target", "wave"), [("gfx942", 64), ("gfx1201", 32)])
@pytest.mark.parametrize("name", KERNELS)
def test_each_library_spec_builds_offline_for_amd_with_resource_usage_and_no_spills(workspace, name, target, wave):
    loaded = load_spec(_copy(workspace, name), workspace)
    launchable, build = build_with(prepare(loaded, None, target, 1), workspace, {})
    assert build.ok, build.summary
    kernel = build.kernels[0]
    assert kernel.name == f"{name}_kernel" and kernel.wavefront_size == wave
    assert kernel.vgprs and kernel.sgprs and kernel.vgpr_spills == 0 and kernel.sgpr_spills == 0
    assert launchable.block[0] % wave == 0


# --- the launchers against the eager torch code they replace ------------------------------------------------------

@pytest.fixture(scope="module")
def library() -> Iterator[dict[str, ModuleType]]:
    """Each kernel file loaded with TRITON_INTERPRET=1, so its launchers run on the CPU (Triton reads the variable when
    @triton.jit decorates and again at each launch; Hyperloom's Triton workers drop it from their environment)."""
    if not (HAS_TRITON and HAS_TORCH):
        pytest.skip("Triton's interpreter needs triton and torch")
    if os.environ.get(FRESH) != "1":
        pytest.skip("run in a fresh Python by test_the_launchers_run_in_a_python_whose_triton_started_in_its_interpreter")
    from hyperloom.tools.triton.entry import load_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        yield {name: load_module(str(LIBRARY / name / f"{name}.py")) for name in KERNELS}


FRESH = "HYPERLOOM_TEST_FUSION_FRESH"


@needs_interpreter
def test_the_launchers_run_in_a_python_whose_triton_started_in_its_interpreter():
    """The launcher tests below, in a fresh Python with TRITON_INTERPRET=1 from its start: in a process where another
    test imported triton first, the interpreter meets triton.language's own @jit helpers (tl.zeros) as compiled
    functions and refuses them ("Cannot call @triton.jit'd outside of the scope of a kernel")."""
    if os.environ.get(FRESH) == "1":
        pytest.skip("this is the fresh Python")
    env = {**os.environ, FRESH: "1", "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "(matches or returns_the_norm or launcher) and not whose_triton"],
                         env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert run.returncode == 0 and " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1], run.stdout[-3000:]


# The interpreter rounds float32 to bfloat16 by truncation (triton/runtime/interpreter.py, cast_impl) where a GPU rounds
# to nearest even: up to one bfloat16 ulp per rounding here, so bfloat16 is held to two ulps (2^-6); the bits a GPU gives
# are compared with HF's eager modules by lab/device-runs/fusion_library.py.
TOLERANCE = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (2 ** -6, 2 ** -6)}
DTYPES = list(TOLERANCE)
SHAPES = [(3, 5, 1000), (2, 4096)]  # a width that is no power of two, and one that is (a single full block, or two)


def _close(got, want, dtype: str) -> None:  # type: ignore[no-untyped-def]
    import torch

    atol, rtol = TOLERANCE[dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), atol=atol, rtol=rtol)


def _draw(shape: tuple[int, ...], dtype: str, seed: int = 0):  # type: ignore[no-untyped-def]
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))


def _hf_rmsnorm(x, weight, eps):  # type: ignore[no-untyped-def]
    """transformers' Qwen2RMSNorm.forward / LlamaRMSNorm.forward."""
    import torch

    hidden = x.to(torch.float32)
    variance = hidden.pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + eps)
    return weight * hidden.to(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm_matches_hf_qwen2_rmsnorm(library, dtype, shape):
    x, weight = _draw(shape, dtype), (_draw(shape[-1:], dtype, 1).abs() + 0.5)
    _close(library["rmsnorm"].rmsnorm(x, weight, 1e-6), _hf_rmsnorm(x, weight, 1e-6), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_rmsnorm_returns_the_norm_of_the_sum_and_writes_the_sum_into_the_residual(library, dtype, shape):
    x, residual, weight = _draw(shape, dtype), _draw(shape, dtype, 1), _draw(shape[-1:], dtype, 2)
    before = residual.clone()
    total = before + x  # HF: hidden_states = residual + hidden_states
    y, updated = library["add_rmsnorm"].add_rmsnorm(x, residual, weight, 1e-6)
    assert updated is residual
    _close(residual, total, dtype)
    _close(y, _hf_rmsnorm(total, weight, 1e-6), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_layernorm_matches_torch_layer_norm(library, dtype, shape, bias):
    import torch

    x, weight = _draw(shape, dtype) * 3 + 1, _draw(shape[-1:], dtype, 1)
    b = _draw(shape[-1:], dtype, 2) if bias else None
    _close(library["layernorm"].layernorm(x, weight, b, 1e-5), torch.nn.functional.layer_norm(x, shape[-1:], weight, b, 1e-5), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_silu_and_mul_matches_vllms_layout_and_hfs_gated_mlp(library, dtype, shape):
    import torch

    x = _draw(shape, dtype)
    d = shape[-1] // 2
    gate, up = x[..., :d], x[..., d:]
    want = torch.nn.functional.silu(gate) * up  # HF: act_fn(gate_proj(x)) * up_proj(x)
    _close(library["silu_and_mul"].silu_and_mul(x), want, dtype)
    _close(library["silu_and_mul"].silu_mul(gate, up), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_mul_matches_torch_gelu_exact_and_tanh(library, dtype, approximate):
    import torch

    x = _draw((3, 5, 1000), dtype) * 2
    gate, up = x[..., :500], x[..., 500:]
    want = torch.nn.functional.gelu(gate, approximate=approximate) * up
    _close(library["gelu_and_mul"].gelu_and_mul(x, approximate), want, dtype)
    _close(library["gelu_and_mul"].gelu_mul(gate, up, approximate), want, dtype)


def _rotate_half(x):  # type: ignore[no-untyped-def]
    import torch

    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("batch", "heads", "kv_heads", "seq", "dim"), [(2, 12, 3, 5, 80), (1, 4, 4, 1, 64)])
def test_rotary_matches_hfs_apply_rotary_pos_emb_on_a_transposed_q(library, dtype, batch, heads, kv_heads, seq, dim):
    q = _draw((batch, seq, heads, dim), dtype).transpose(1, 2)  # HF: q_proj(x).view(...).transpose(1, 2), a strided view
    k = _draw((batch, kv_heads, seq, dim), dtype, 1)
    cos, sin = _draw((batch, seq, dim), dtype, 2), _draw((batch, seq, dim), dtype, 3)
    assert seq == 1 or not q.is_contiguous()  # one position: the transpose is contiguous (a decode step)
    q_out, k_out = library["rotary"].apply_rotary_pos_emb(q, k, cos, sin)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    _close(q_out, q * c + _rotate_half(q) * s, dtype)
    _close(k_out, k * c + _rotate_half(k) * s, dtype)
    _close(library["rotary"].rotary(k, cos[:1], sin[:1]), k * c[:1] + _rotate_half(k) * s[:1], dtype)  # one cos row for every batch


def test_a_launcher_takes_a_tune_winners_params_as_the_spec_names_them(library):
    rmsnorm = library["rmsnorm"]
    assert rmsnorm.launch_params(1536, {"autotune_config": 4}) == {"BLOCK": 2048, "num_warps": 8}
    assert rmsnorm.launch_params(1536) == {"BLOCK": 2048, "num_warps": 8}
    x, weight = _draw((4, 1536), "float32"), _draw((1536,), "float32", 1)
    _close(rmsnorm.rmsnorm(x, weight, params={"autotune_config": 0}), _hf_rmsnorm(x, weight, 1e-6), "float32")  # BLOCK 1024: two chunks


@pytest.mark.parametrize(("call", "says"), [
    (lambda lib, t: lib["rmsnorm"].rmsnorm(t((4, 96)), t((95,))), r"weight of shape \(96,\)"),
    (lambda lib, t: lib["add_rmsnorm"].add_rmsnorm(t((4, 96)), t((4, 95)), t((96,))), "residual of x's shape"),
    (lambda lib, t: lib["silu_and_mul"].silu_and_mul(t((4, 95))), "odd number"),
    (lambda lib, t: lib["gelu_and_mul"].gelu_and_mul(t((4, 96)), "sigmoid"), "approximate='sigmoid'"),
    (lambda lib, t: lib["rotary"].rotary(t((1, 2, 3, 8)), t((1, 4, 8)), t((1, 4, 8))), r"cos and sin of \[1 or 1, 3, 8\]"),
])
def test_a_launcher_refuses_tensors_that_do_not_fit_with_what_to_pass(library, call, says):
    with pytest.raises(ValueError, match=says):
        call(library, lambda shape: _draw(shape, "float32"))


MEAN_ORDER = REPO / "tests" / "fixtures" / "torch_reduce" / "h200_torch_mean_order.npz"  # its README says how it was captured


def test_the_rmsnorm_launcher_matches_torchs_cuda_mean_square_bit_for_bit_on_rows_captured_on_the_h200(library):
    """x.float().pow(2).mean(-1) as torch 2.11 computed it on the H200, for one decode row and a 256-row prefill of
    Qwen2-1.5B's width and two others: the kernel's sum in eager order gives every captured mean's bits (the
    interpreter adds float32 as a GPU does, one rounding an add); the BLOCK-chunk order does not."""
    import numpy as np
    import torch

    rmsnorm = library["rmsnorm"]
    captured = np.load(MEAN_ORDER)
    assert str(captured["torch_version"]).startswith("2.11")
    block_order_misses = 0
    for name, rows in (("1x1536", 1), ("256x1536", 256), ("1x4096", 1), ("1x896", 1)):
        x, want = torch.from_numpy(captured[f"x_{name}"]), torch.from_numpy(captured[f"mean_{name}"])
        cols = x.shape[1]
        meta = rmsnorm.launch_params(cols, None, rows)  # the lane count of torch's config for `rows` rows at once
        assert meta["LANES"] == {1536: 256 if rows == 1 else 32, 4096: 512, 896: 128}[cols]
        eager, block = torch.empty(len(x)), torch.empty(len(x))
        rmsnorm.mean_square_kernel[(len(x),)](x, eager, cols, meta["BLOCK"], meta["LANES"], meta["STEPS"])
        rmsnorm.mean_square_kernel[(len(x),)](x, block, cols, meta["BLOCK"])
        assert torch.equal(eager.view(torch.int32), want.view(torch.int32)), name
        block_order_misses += int((block.view(torch.int32) != want.view(torch.int32)).sum())
    assert block_order_misses > 0  # the order is what the test checks: another one misses


@pytest.mark.parametrize(("rows", "cols", "lanes"), [
    (1, 1536, 256), (16, 1536, 32), (256, 1536, 32), (1, 4096, 512), (512, 4096, 32), (1, 896, 128), (1, 5000, 512),
    (2, 100, 0),      # 128 columns or fewer: torch reads no float4 vectors, an order not modelled
    (1, 1538, 0),     # not whole float4 vectors
    (1, 65536, 0),    # 32 vectors a thread: torch splits the row over warps too
])
def test_the_rmsnorm_launcher_takes_torchs_lane_count_where_its_order_is_modelled(library, rows, cols, lanes):
    rmsnorm = library["rmsnorm"]
    assert rmsnorm.eager_reduce_lanes(rows, cols) == lanes
    meta = rmsnorm.launch_params(cols, None, rows)
    assert meta.get("LANES", 0) == lanes and (not lanes or meta["enable_fp_fusion"] is False)
