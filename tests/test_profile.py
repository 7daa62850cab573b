"""profile on traces: the fixtures parse, and grouping, classes, byte/flop models, roofs and fusion match hand-computed numbers."""

from __future__ import annotations

import gzip
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import yaml
import pytest

from helpers import FIXTURES, REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.profile.analyse import analyse
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.classify import kernel_class, op_class
from hyperloom.tools.profile.load import read_trace
from hyperloom.tools.profile.models import ProfileRequest, ProfileResult
from hyperloom.tools.profile.roof import Roofs, from_datasheet, from_file, place_work
from hyperloom.tools.profile.trace import Kernel, Op, Trace
from hyperloom.tools.profile.work import WorkCache, op_work

PROFILE = FIXTURES / "profile"
MI250 = PROFILE / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
A100 = PROFILE / "a100_alexnet_trace.json.gz"
CPU = PROFILE / "cpu_mlp_trace.json"
STATIC_CACHE = PROFILE / "h200_static_cache_trace.json.gz"  # decode compiled by torch.compile (fixtures/profile/README.md)
DECODER = PROFILE / "rocprofv3" / "decoder_kernel_trace.csv"
DOCS = PROFILE / "rocprofv3" / "docs_kernel_trace.csv"
H200_ROOFLINE = REPO / "results" / "h200" / "roofline.json"  # measured on the lent H200 (results/h200/README.md)
NO_ROOF = Roofs([], "none")


def _op(name: str, dims: list, types: list, concrete: list | None = None, ext: int = 1) -> Op:
    return Op(name, 0.0, 1.0, "1", ext, dims, types, concrete or [""] * len(dims))


# --- the rocprofv3 kernel trace (built from rocprofv3's documented columns; see fixtures/profile/README.md) ---

def test_a_rocprofv3_kernel_trace_is_grouped_with_its_copies_and_its_agents_name():
    trace = read_trace(DECODER, "decoder_kernel_trace.csv")
    a = analyse(trace, NO_ROOF)
    assert trace.tool == "rocprofv3" and trace.device_name() == "AMD Instinct MI300X"
    assert len(trace.kernels) == 9 and a.device_time_us == pytest.approx(164.0)  # 8 dispatches (154 us) + one 10 us copy
    assert trace.window_us[1] - trace.window_us[0] == pytest.approx(230.0)
    (busy,) = a.devices  # the 10 us fill on stream 2 overlaps the last GEMM: 154 us busy of 230
    assert busy.busy_s == pytest.approx(154e-6) and busy.busy_percent == pytest.approx(100 * 154 / 230)
    top = a.kernels[0]
    assert top.name.startswith("Cijk_Alik_Bljk_BBS_BH_MT256x128x64") and top.kernel_class == "gemm"
    assert (top.count, top.total_s, top.mean_s) == (2, pytest.approx(80e-6), pytest.approx(40e-6))
    assert top.percent_of_device_time == pytest.approx(100 * 80 / 164)
    assert top.launch_shapes == ["grid 256x1x1 block 256x1x1 x2"]  # 65536 work-items in workgroups of 256
    assert {c.kernel_class: round(c.total_s * 1e6, 6) for c in a.classes} == {
        "gemm": 110.0, "communication": 20.0, "elementwise": 18.0, "memory copy": 10.0, "reduction": 6.0}
    assert a.fusion == [] and not a.launch_bound and "rocprofv3 records no framework ops" in a.findings[0]


def test_the_documentation_example_of_the_older_columns_parses_with_queues_as_streams():
    trace = read_trace(DOCS, "docs_kernel_trace.csv")
    assert len(trace.kernels) == 7 and {k.stream for k in trace.kernels} == {"1", "2", "3", "4"}
    first = trace.kernels[0]
    assert first.name.startswith("void "
                                 "addition_kernel<float>") and first.dur_us == pytest.approx((8819330200116308 - 8819330200067564) / 1e3)
    assert first.launch == "grid 16x1024x1 block 64x1x1"


# --- torch.profiler Chrome traces ---

def test_a_real_rocm_trace_links_each_kernel_to_the_op_that_launched_it():
    """HTA's MI250 capture (ROCm 6.2): the GEMM and the bias copy carry aten::addmm's External id; launch geometry
    comes from hipLaunchKernel's args (ROCm's kernel events have none) and copy sizes from hipMemcpyWithStream."""
    trace = read_trace(MI250, "mi250")
    a = analyse(trace, NO_ROOF)
    gemm = next(k for k in trace.kernels if k.name.startswith("Cijk_Alik_Bljk"))
    assert gemm.op.name == "aten::addmm" and gemm.launch == "grid 512x1x1 block 256x1x1"
    assert [k.bytes for k in trace.kernels if k.kind == "memcpy"] == [2560, 2560]
    assert len(trace.kernels) == 16 and a.device_time_us == pytest.approx(149.042, abs=1e-3)
    addmm = next(h for h, _ in a.ranked if h.op == "aten::addmm")
    assert addmm.total_s == pytest.approx((17.6 + 6.88) * 1e-6)  # the GEMM and the bias copy it launched
    assert addmm.flops_per_call == 2 * 5 * 128 * 128 and addmm.bytes_per_call == (128 + 5 * 128 + 128 * 128 + 5 * 128) * 4
    assert a.launch_bound and a.devices[0].busy_percent < 2 and "launch-bound" in a.findings[0]
    assert [c.ops for c in a.fusion] == [["aten::mse_loss", "aten::mean"], ["aten::sum", "aten::add_"]]
    assert a.fusion[0].bytes_saved_per_occurrence == 2 * 5 * 128 * 4  # mse_loss's [5, 128] float32, written and read back


def test_an_nvidia_trace_without_shapes_says_so_and_still_groups_kernels():
    trace = read_trace(A100, "a100")
    a = analyse(trace, NO_ROOF)
    assert trace.device_name() == "NVIDIA A100-PG509-200" and len(trace.kernels) == 98
    copy = next(k for k in trace.kernels if k.kind == "memcpy")
    assert copy.bytes == 92928 and copy.launch is None
    sgemm = next(g for g in a.kernels if g.name.startswith("ampere_sgemm"))
    assert sgemm.kernel_class == "gemm" and sgemm.launch_shapes[0].startswith("grid 128x4x1 block 128x1x1")
    assert any("record_shapes=False" in f for f in a.findings)


def test_a_cpu_only_trace_ranks_operators_by_self_time_and_finds_its_fusions():
    trace = read_trace(CPU, "cpu")
    a = analyse(trace, NO_ROOF)
    assert trace.cpu_only and a.devices == [] and not a.launch_bound
    slices = sum(k.dur_us for k in trace.kernels)
    assert slices == pytest.approx(sum(op.dur_us for op in trace.ops if op.parent is None))  # self times add up to the top-level ops
    addmm = next(h for h, _ in a.ranked if h.label.startswith("aten::addmm [128]"))
    assert addmm.flops_per_call == 2 * 8 * 64 * 128 and addmm.bytes_per_call == (128 + 8 * 64 + 64 * 128 + 8 * 128) * 4
    linear = next(h for h, _ in a.ranked if h.op == "aten::linear")
    assert linear.bytes_per_call is None and "counted in aten::addmm" in linear.work_model
    chains = {tuple(c.ops): c for c in a.fusion}
    assert set(chains) == {("aten::gelu", "aten::layer_norm"), ("aten::softmax", "aten::mul", "aten::add")}
    assert (chains[("aten::gelu", "aten::layer_norm")].occurrences == 2
            and chains[("aten::gelu", "aten::layer_norm")].bytes_saved_per_occurrence == 2 * 8 * 128 * 4)
    assert chains[("aten::softmax", "aten::mul", "aten::add")].before == "aten::linear"


# --- kernels inside compiled code (the H200 trace of a decoder under the static KV cache) ---

def test_kernels_inside_a_compiled_region_are_ranked_each_by_name_and_launch_shape_not_as_one_region():
    trace = read_trace(STATIC_CACHE, "static")
    region_us = sum(k.dur_us for k in trace.kernels if k.kind == "kernel" and k.op is not None
                    and k.op.name == "Torch-Compiled Region: 0/0")
    analysis = analyse(trace, NO_ROOF)
    spots = [h for h, _ in analysis.ranked]
    assert not any(h.label.startswith("Torch-Compiled Region") for h in spots)  # it was one hotspot of 59 % before
    inside = [h for h in spots if "ran inside Torch-Compiled Region: 0/0" in h.work_model]
    assert abs(sum(h.total_s for h in inside) * 1e6 - region_us) < 1e-6 * region_us  # every microsecond attributed once
    assert 100 * region_us / analysis.device_time_us == pytest.approx(59, abs=1)  # copies inside it keep their byte counts
    top = spots[0]
    assert top.kernel_class == "gemm" and top.label.startswith("nvjet_sm90_tst_384x8") and "[grid 2x66x1 block 384x1x1]" in top.label
    norm = next(h for h in inside if h.label.startswith("triton_per_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0"))
    assert norm.kernel_class == "normalization" and ("Inductor's persistent reduction kernel fusing "
                                                     "_to_copy_add_embedding") in norm.work_model
    assert norm.bytes_per_call is None and norm.roof is None and "no byte/flop model" in norm.work_model  # said, not guessed
    said = next(f for f in analysis.findings if "inside compiled code" in f)
    assert "59 % of device time" in said and "19 kernels" in said and "13 Inductor kernels" in said and "6 library kernels" in said


@pytest.mark.parametrize(("name", "kind", "fused", "norm"), [
    ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", "persistent reduction", "_to_copy_add_mean_mul_pow_rsqrt", True),
    ("triton_poi_fused_add_copy__12", "pointwise", "add_copy_", False),
    ("triton_tem_fused_mm_0", "GEMM template", "mm", False),
    ("triton_red_fused_var_mean_1", "reduction", "var_mean", False),  # LayerNorm's statistics, no rsqrt in this kernel
])
def test_an_inductor_kernel_name_gives_its_kind_and_the_ops_it_fused(name, kind, fused, norm):
    from hyperloom.tools.profile.compiled import inductor_kernel

    found = inductor_kernel(name)
    assert found is not None and (found.kind, found.fused, found.is_norm) == (kind, fused, norm)
    assert inductor_kernel("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN") is None


# --- classes ---

@pytest.mark.parametrize(("name", "kind", "op", "expected"), [
    ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN", "kernel", None, "gemm"),
    ("nvjet_tst_128x64_64x8_1x2_h_bz_coopA_NNT", "kernel", None, "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "kernel", None, "gemm"),
    ("cudnn_ampere_scudnn_128x64_relu_interior_nn_v1", "kernel", None, "gemm"),
    ("triton_tem_fused_mm_0", "kernel", None, "gemm"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "kernel", None, "attention"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "kernel", None, "attention"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>", "kernel", None, "normalization"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", "kernel", None, "normalization"),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "kernel", None, "normalization"),  # Inductor's RMSNorm
    ("triton_per_fused_sum_1", "kernel", None, "reduction"),
    ("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy_3", "kernel", None, "elementwise"),  # attention's prologue
    ("triton_poi_fused_add_cos_sin_0", "kernel", None, "elementwise"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", "kernel", None, "elementwise"),
    ("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>", "kernel", None, "memory copy"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "kernel", None, "communication"),
    ("Memcpy HtoD (Pageable -> Device)", "memcpy", None, "memory copy"),
    ("some_custom_kernel", "kernel", "aten::rms_norm", "normalization"),
    ("some_custom_kernel", "kernel", None, "other"),
])
def test_each_kernel_gets_its_class_from_its_name_then_its_op(name, kind, op, expected):
    assert kernel_class(name, kind, op) == expected


def test_ops_get_their_class_with_in_place_and_foreach_variants():
    assert [op_class(n) for n in ("aten::addmm", "aten::add_", "aten::_foreach_mul_", "aten::copy_", "aten::mean",
                                  "aten::_scaled_dot_product_flash_attention", "c10d::allreduce_", "aten::view")] == [
        "gemm", "elementwise", "elementwise", "memory copy", "reduction", "attention", "communication", "other"]


# --- byte and flop models, by hand ---

BF16, F32 = "c10::BFloat16", "float"


@pytest.mark.parametrize(("op", "bytes_moved", "flops", "out"), [
    (_op("aten::mm", [[8, 4096], [4096, 11008]], [BF16, BF16]), (8 * 4096 + 4096 * 11008 + 8 * 11008) * 2, 2 * 8 * 11008 * 4096,
     (8, 11008)),
    (_op("aten::addmm", [[11008], [8, 4096], [4096, 11008], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"]),
     (11008 + 8 * 4096 + 4096 * 11008 + 8 * 11008) * 2, 2 * 8 * 11008 * 4096, (8, 11008)),
    (_op("aten::bmm", [[32, 128, 64], [32, 64, 128]], [F32, F32]), (3 * 32 * 128 * 64 + 32 * 128 * 128 - 32 * 128 * 64) * 4,
     2 * 32 * 128 * 128 * 64, (32, 128, 128)),
    (_op("aten::linear", [[2, 16, 512], [1024, 512], [1024]], [F32, F32, F32]), (2 * 16 * 512 + 1024 * 512 + 1024 + 2 * 16 * 1024) * 4,
     2 * 32 * 1024 * 512, (2, 16, 1024)),
    (_op("aten::matmul", [[2, 16, 512], [512, 64]], [F32, F32]), (2 * 16 * 512 + 512 * 64 + 32 * 64) * 4, 2 * 32 * 64 * 512, (32, 64)),
    (_op("aten::add", [[4, 1, 8], [8], []], [F32, F32, "Scalar"]), (32 + 8 + 32) * 4, 32, (4, 1, 8)),
    (_op("aten::mul_", [[4, 4096], [4, 1]], [BF16, F32]), 4 * 4096 * 2 + 4 * 4 + 4 * 4096 * 2, 4 * 4096, (4, 4096)),
    (_op("aten::fill_", [[4, 4096], []], [BF16, "Scalar"]), 4 * 4096 * 2, 0, (4, 4096)),
    (_op("aten::mean", [[2, 7, 4096], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[-1]", "True", ""]), (2 * 7 * 4096 + 2 * 7) * 4,
     2 * 7 * 4096, (2, 7, 1)),
    (_op("aten::sum", [[5, 128], [], []], [F32, "ScalarList", "Scalar"], ["", "", "False"]), (640 + 1) * 4, 640, ()),
    (_op("aten::_fused_rms_norm", [[2, 7, 4096], [], [4096], []], [BF16, "ScalarList", BF16, "Scalar"]), (2 * 2 * 7 * 4096 + 4096) * 2,
     4 * 2 * 7 * 4096, (2, 7, 4096)),
    (_op("aten::native_layer_norm", [[8, 128], [], [128], [128], []], [F32, "ScalarList", F32, F32, "Scalar"]), (2 * 8 * 128 + 2 * 128) * 4,
     5 * 8 * 128, (8, 128)),
    (_op("aten::_softmax", [[2, 32, 7, 7], [], []], [F32, "Scalar", "Scalar"]), 2 * 2 * 32 * 49 * 4, 5 * 2 * 32 * 49, (2, 32, 7, 7)),
    (_op("aten::copy_", [[2, 7, 4096], [2, 7, 4096], []], [F32, BF16, "Scalar"]), 2 * 7 * 4096 * (4 + 2), 0, (2, 7, 4096)),
    (_op("aten::_to_copy", [[2, 7, 4096], [], [], [], [], [], []], [F32, "Scalar", "", "", "", "Scalar", ""],
         ["", "15", "", "", "", "False", ""]),
     2 * 7 * 4096 * (4 + 2), 0, (2, 7, 4096)),
    (_op("aten::embedding", [[32000, 4096], [1, 7], [], [], []], [BF16, "long int", "Scalar", "Scalar", "Scalar"]),
     7 * 8 + 2 * 7 * 4096 * 2, 0, (1, 7, 4096)),
])
def test_work_models_match_hand_counts(op, bytes_moved, flops, out):
    work = op_work(op)
    assert (work.bytes_moved, work.flops, work.output.dims) == (bytes_moved, flops, out)


def test_attention_counts_the_causal_triangle_only_when_the_op_was_causal():
    q, kv = [1, 32, 128, 128], [1, 8, 128, 128]
    dims, types = [q, kv, kv, [], [], [], []], [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", "Scalar"]
    causal = op_work(_op("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.0", "True", "False", ""]))
    full = op_work(_op("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.0", "False", "False", ""]))
    pairs = 128 * 128 - 128 * 127 // 2  # query i sees keys 0..i
    assert causal.flops == 2 * 32 * pairs * (128 + 128) and full.flops == 2 * 32 * 128 * 128 * 256
    assert causal.bytes_moved == (2 * 32 * 128 * 128 + 2 * 8 * 128 * 128) * 2
    decode = op_work(_op("aten::_scaled_dot_product_flash_attention", [[1, 32, 1, 128], [1, 32, 129, 128], [1, 32, 129, 128]] + dims[3:],
                         types, ["", "", "", "0.0", "True", "False", ""]))
    assert decode.flops == 2 * 32 * 129 * 256  # one new query sees every cached key
    flash = op_work(_op("aten::_flash_attention_forward", [[1, 128, 32, 128], [1, 128, 8, 128], [1, 128, 8, 128]] + [[]] * 6,
                        [BF16] * 3 + ["", "", "Scalar", "Scalar", "Scalar", "Scalar"], ["", "", "", "", "", "128", "128", "0.0", "True"]))
    assert flash.flops == causal.flops  # [B, S, H, D] layout, same work


def test_ops_without_a_model_or_without_shapes_get_none():
    assert op_work(_op("aten::cat", [[[2, 3], [2, 3]], []], ["TensorList", "Scalar"])) is None
    assert op_work(_op("aten::mm", [[], []], ["", ""])) is None
    assert op_work(_op("aten::mm", [[8]], [F32])) is None  # a signature that does not fit: no model, not a wrong one


# --- roofs ---

def _gpu_trace(device: str, kernels: list[Kernel], ops: list[Op]) -> Trace:
    return Trace("torch.profiler", kernels, ops, (0.0, max(k.end_us for k in kernels)), {"0": device})


def test_a_bf16_gemm_is_placed_under_the_measured_tensor_core_roof_of_the_same_device():
    roofs, note = from_file(H200_ROOFLINE, "roofline.json", "NVIDIA H200")
    mm = _op("aten::mm", [[4096, 4096], [4096, 4096]], [BF16, BF16])
    trace = _gpu_trace("NVIDIA H200", [Kernel("nvjet_tst_256x128", 0.0, 250.0, "0", "7", "kernel", op=mm)], [mm])
    spot = analyse(trace, roofs).ranked[0][0]
    mma = next(c.value for c in roofs.ceilings if c.name == "mma_f16")
    achieved = 2 * 4096**3 / 250e-6 / 1e12
    assert note is None and spot.roof == "mma_f16" and spot.bound == "compute" and spot.roof_tag.value == "MEASURED"
    assert spot.achieved_tflops == pytest.approx(achieved) and spot.percent_of_roof == pytest.approx(100 * achieved / mma)
    assert spot.headroom_s == pytest.approx(250e-6 * (1 - achieved / mma))


def test_an_elementwise_op_is_placed_under_the_best_memory_ceiling_and_scores_by_headroom():
    roofs = from_file(H200_ROOFLINE, "roofline.json", "NVIDIA H200")[0]
    best = max(c.value for c in roofs.ceilings if c.kind == "memory")
    placed = place_work("elementwise", BF16, 3 * 2**30, 3 * 2**29, 1e-3, roofs)
    assert placed.roof == max((c for c in roofs.ceilings if c.kind == "memory"), key=lambda c: c.value).name
    assert placed.unit == "GB/s" and placed.percent == pytest.approx(100 * 3 * 2**30 / 1e-3 / 1e9 / best)
    assert place_work("gemm", "c10::Float8_e4m3fn", 100, 1000, 1e-3, roofs).percent is None  # no fp8 ceiling: no roof, not the memory roof


def test_a_roofline_file_of_another_device_is_refused_and_a_datasheet_roof_is_assumed():
    with pytest.raises(HyperloomError, match="measured on 'NVIDIA H200', but the trace ran on 'NVIDIA A100"):
        from_file(H200_ROOFLINE, "roofline.json", "NVIDIA A100-PG509-200")
    _, note = from_file(H200_ROOFLINE, "roofline.json", None)
    assert "could not be checked" in note
    sheet = from_datasheet("NVIDIA H200")
    assert sheet.memory().value == 4800 and sheet.compute(BF16).value == 989.4 and sheet.compute(F32).value == 67.0
    assert all(c.evidence.tag.value == "ASSUMED" for c in sheet.ceilings)
    assert from_datasheet("AMD Radeon Graphics").ceilings == []
    h100 = from_datasheet("NVIDIA H100 80GB HBM3")  # the SXM5 part as torch and nvidia-smi name it (the lent H100)
    assert h100.memory().value == 3350 and "H100" in h100.memory().source


# --- fusion, by hand ---

def _chain_trace() -> Trace:
    """Two decoder-like blocks: GEMM, then add → mul → rsqrt over [4, 1024] bf16, then GEMM; one extra add whose
    shapes do not line up with the chain's, and a fill_ (which reads nothing)."""
    x, w = [4, 1024], [1024, 1024]
    ops, kernels, t = [], [], 0.0

    def launch(op: Op, name: str, dur: float) -> None:
        nonlocal t
        ops.append(op)
        kernels.append(Kernel(name, t, dur, "0", "7", "kernel", op=op))
        t += dur + 1.0

    for block in range(2):
        launch(_op("aten::mm", [x, w], [BF16, BF16], ext=10 * block + 1), "nvjet_gemm", 10.0)
        launch(_op("aten::add", [x, x, []], [BF16, BF16, "Scalar"], ext=10 * block + 2), "vectorized_elementwise_kernel<add>", 2.0)
        launch(_op("aten::mul", [x, [1024]], [BF16, BF16], ext=10 * block + 3), "vectorized_elementwise_kernel<mul>", 2.0)
        launch(_op("aten::rsqrt", [x], [BF16], ext=10 * block + 4), "vectorized_elementwise_kernel<rsqrt>", 1.0)
        launch(_op("aten::mm", [x, w], [BF16, BF16], ext=10 * block + 5), "nvjet_gemm", 10.0)
    launch(_op("aten::add", [[7, 3], [7, 3], []], [F32, F32, "Scalar"], ext=90), "vectorized_elementwise_kernel<add>", 1.0)
    launch(_op("aten::fill_", [[4, 1024], []], [BF16, "Scalar"], ext=91), "vectorized_elementwise_kernel<fill>", 1.0)
    return _gpu_trace("NVIDIA H200", kernels, ops)


def test_a_chain_of_memory_bound_ops_between_gemms_is_one_candidate_with_the_bytes_a_fusion_saves():
    (candidate,) = analyse(_chain_trace(), NO_ROOF).fusion
    intermediate = 4 * 1024 * 2  # each [4, 1024] bf16 output, written by one kernel and read by the next
    moved = (3 * intermediate) + (intermediate + 1024 * 2 + intermediate) + (2 * intermediate)
    assert candidate.ops == ["aten::add", "aten::mul", "aten::rsqrt"] and candidate.occurrences == 2
    assert candidate.before == "aten::mm" and candidate.after == "aten::mm" and candidate.kernels_per_occurrence == 3
    assert candidate.bytes_saved_per_occurrence == 2 * 2 * intermediate and candidate.bytes_saved_total == 8 * intermediate
    assert candidate.bytes_moved_per_occurrence == moved and candidate.time_s == pytest.approx(10e-6)
    assert candidate.estimated_time_saved_s == pytest.approx(10e-6 * 4 * intermediate / moved)
    assert candidate.shapes == ["[4, 1024] bfloat16"] * 3


# --- broken traces, refused with their reason ---

@pytest.fixture
def traces(workspace):
    folder = workspace.root
    text = CPU.read_text()
    (folder / "truncated.json").write_text(text[: len(text) // 2])
    packed = gzip.compress(text.encode())
    (folder / "truncated.json.gz").write_bytes(packed[: len(packed) // 2])
    (folder / "notes.txt").write_text("these are my notes, not a trace\n")
    (folder / "other_tool.json").write_text(json.dumps([{"name": "Paint", "cat": "blink", "ph": "X", "ts": 1, "dur": 2, "pid": 1,
                                                         "tid": 1}]))
    (folder / "rocprof.json").write_text(json.dumps({"rocprofiler-sdk-tool": [{"metadata": {}}]}))
    (folder / "config.json").write_text(json.dumps({"hello": 1}))
    (folder / "empty_steps.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 1, "dur": 5, "pid": 1, "tid": 1}]}))
    (folder / "rocpd.db").write_bytes(b"SQLite format 3\x00" + bytes(100))
    header = DECODER.read_text().splitlines()[0]
    (folder / "none_kernel_trace.csv").write_text(header + "\n")
    (folder / "cut_kernel_trace.csv").write_text("\n".join(DECODER.read_text().splitlines()[:3])[:-60] + "\n")
    (folder / "hip_api_trace.csv").write_text('"Domain","Function","Process_Id","Thread_Id","Correlation_Id",'
                                               '"Start_Timestamp","End_Timestamp"\n')
    (folder / "empty.json").write_text("")
    return workspace


@pytest.mark.parametrize(("name", "reason"), [
    ("truncated.json", "the file is truncated"),
    ("truncated.json.gz", "gzip file that does not decompress"),
    ("notes.txt", "neither JSON nor a rocprofv3 CSV"),
    ("other_tool.json", "not torch.profiler's"),
    ("rocprof.json", "rocprofv3's JSON output"),
    ("config.json", "not a Chrome trace"),
    ("empty_steps.json", "no GPU kernels and no operators"),
    ("rocpd.db", "SQLite database"),
    ("none_kernel_trace.csv", "no kernel dispatches"),
    ("cut_kernel_trace.csv", "looks truncated"),
    ("hip_api_trace.csv", "something other than kernels"),
    ("empty.json", "is empty"),
])
def test_a_broken_or_foreign_trace_is_refused_with_its_reason(traces, name, reason):
    with pytest.raises(HyperloomError, match=reason) as caught:
        run_profile(ProfileRequest(trace=name, plot=False), traces)
    assert "Next step" in str(caught.value)


def test_a_trace_outside_the_workspace_and_a_request_with_both_sources_are_refused(workspace):
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_profile(ProfileRequest(trace="/etc/hostname"), workspace)
    with pytest.raises(ValueError, match="exactly one of workload"):
        ProfileRequest(trace="a.json", workload="b.py")
    with pytest.raises(ValueError, match="exactly one of workload"):
        ProfileRequest()


# --- the whole tool on a fixture: files, schema, hand-off ---

def test_profiling_a_trace_writes_the_report_json_plots_and_a_reference_stub_that_runs(workspace):
    shutil.copy(CPU, workspace.root / "cpu.json")
    result = run_profile(ProfileRequest(trace="cpu.json", name="run1", top=5), workspace)
    folder = workspace.root / ".hyperloom/profile/run1"
    assert {Path(f).name for f in result.files} >= {"report.md", "profile.json", "top_kernels.png", "top_kernels.svg",
                                                   "hotspots_roofline.png", "hotspots_roofline.svg"}
    assert result.evidence.tag.value == "ASSUMED" and "recorded trace cpu.json" in result.evidence.source
    assert len(result.hotspots) == 5 and result.kernel_groups > 5 and result.fusion
    saved = json.loads((folder / "profile.json").read_text())
    from hyperloom.validators.schemas import schema_errors

    assert schema_errors("profile", saved) == []
    assert ProfileResult.model_validate(saved).summary == result.summary
    report = (folder / "report.md").read_text()
    assert "## Hotspots" in report and "## Fusion candidates" in report and "aten::gelu → aten::layer_norm" in report
    spots = [h for h in result.handoff if h.kind == "hotspot"]
    assert len(spots) == 3 and all(h.rank <= 5 for h in spots) and any(h.kind == "fusion" for h in result.handoff)
    rng = np.random.default_rng(0)
    for handoff in spots:  # each draft's reference runs at its recorded shapes and returns the declared output
        spec = yaml.safe_load((workspace.root / handoff.spec).read_text())
        module = _load(workspace.root / handoff.folder / "reference.py")
        buffers = [a for a in spec["args"] if a["kind"] == "buffer"]
        inputs = {a["name"]: rng.standard_normal(a["shape"]).astype(a["dtype"]) for a in buffers if a["role"] == "input"}
        out = module.reference(inputs, spec["shapes"][0])["out"]
        declared = next(a for a in buffers if a["role"] == "output")
        assert list(out.shape) == declared["shape"] and out.dtype == np.dtype(declared["dtype"])
        assert {f"{handoff.folder}/kernel.yaml", f"{handoff.folder}/handoff.json"} <= set(result.files)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_addmm_hand_off_names_the_spec_buffers_and_its_reference_computes_the_op(workspace):
    from hyperloom.tools.profile.group import Classifier, work_items
    from hyperloom.tools.profile.handoff import handoffs
    from hyperloom.tools.profile.hotspots import rank_hotspots

    trace = read_trace(CPU, "cpu")
    ranked = [(h, i) for h, i in rank_hotspots(work_items(trace.kernels, Classifier(), WorkCache()), NO_ROOF, 1.0)
                            if h.label.startswith("aten::addmm [128]")]
    (draft,) = handoffs(ranked, [], [], workspace.root, workspace, "cpu", count=1)
    assert draft.metric == {"bytes": 39424, "flops": 131072} and draft.ops == ["aten::addmm"]
    spec = yaml.safe_load((workspace.root / draft.spec).read_text())
    assert [(a["name"], a["shape"], a["role"]) for a in spec["args"]] == [
        ("bias", [128], "input"), ("a", [8, 64], "input"), ("b", [64, 128], "input"), ("out", [8, 128], "output")]
    reference = (workspace.root / draft.folder / "reference.py").read_text()
    assert "call(torch.ops.aten.addmm, [args['bias'], args['a'], args['b'], 1, 1])" in reference
    rng = np.random.default_rng(1)
    inputs = {"bias": rng.standard_normal(128, dtype=np.float32), "a": rng.standard_normal((8, 64), dtype=np.float32),
              "b": rng.standard_normal((64, 128), dtype=np.float32)}
    out = _load(workspace.root / draft.folder / "reference.py").reference(inputs, {})["out"]
    np.testing.assert_allclose(out, inputs["a"] @ inputs["b"] + inputs["bias"], rtol=1e-5, atol=1e-5)


def test_the_committed_schema_is_the_result_models_schema():
    committed = json.loads((REPO / "validators" / "profile.schema.json").read_text())
    from hyperloom.tools.profile.schema import result_schema

    assert committed == result_schema(), ("validators/profile.schema.json is stale: python -m hyperloom.tools.profile.schema > "
                                          "validators/profile.schema.json")


@pytest.mark.parametrize(("name", "short"), [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, "
     "at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
     "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, detail::Array<char*, 3> >"),
    ("void at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const",
     "launch_clamp_scalar()"),
    ("Memcpy HtoD (Host -> Device)", "Memcpy HtoD (Host -> Device)"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_Generic"),
])
def test_kernel_names_are_shortened_for_people_and_kept_whole_in_the_data(name, short):
    from hyperloom.tools.profile.classify import short_name

    assert short_name(name, 200) == short and len(short_name(name, 40)) == min(40, len(short))


def test_the_device_scripts_trimmed_trace_is_small_and_still_reads_as_a_real_trace(tmp_path):
    spec = importlib.util.spec_from_file_location("profile_llama", REPO / "lab" / "device-runs" / "profile_llama.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # stdlib only at import: it runs on the GPU host before hyperloom is importable
    (tmp_path / "trace.json").write_bytes(gzip.decompress(A100.read_bytes()))
    kept = script.trimmed(tmp_path / "trace.json", 20, tmp_path / "fixture" / "cut.json.gz")
    trace = read_trace(tmp_path / "fixture" / "cut.json.gz", "cut")
    assert len(trace.kernels) == 20 and kept["bytes"] < A100.stat().st_size
    assert trace.device_name() == "NVIDIA A100-PG509-200" and max(k.end_us for k in trace.kernels) <= trace.window_us[1]


def test_a_bf16_hand_off_declares_bfloat16_buffers_and_its_reference_takes_and_returns_bfloat16_values(workspace):
    torch = pytest.importorskip("torch")
    import ml_dtypes
    from hyperloom.tools.profile.group import WorkItem
    from hyperloom.tools.profile.handoff import handoffs
    from hyperloom.tools.profile.hotspots import hotspot

    op = _op("aten::mm", [[4, 8], [8, 16]], [BF16, BF16])
    item = WorkItem("aten::mm [4, 8] bfloat16, [8, 16] bfloat16", "gemm", op, op_work(op), total_us=3.0, calls={1})
    (draft,) = handoffs([(hotspot(item, NO_ROOF, 3.0), item)], [], [], workspace.root, workspace, "synthetic")
    spec = yaml.safe_load((workspace.root / draft.spec).read_text())
    assert [(a["name"], a["dtype"]) for a in spec["args"]] == [("a", "bfloat16"), ("b", "bfloat16"), ("out", "bfloat16")]
    assert not any("bits_of" in a for a in spec["args"]) and draft.tolerance["rtol"] == pytest.approx(1.6e-2)
    a, b = torch.randn(4, 8).to(torch.bfloat16), torch.randn(8, 16).to(torch.bfloat16)
    values = {"a": a.float().numpy().astype(ml_dtypes.bfloat16), "b": b.float().numpy().astype(ml_dtypes.bfloat16)}
    out = _load(workspace.root / draft.folder / "reference.py").reference(values, {})["out"]
    np.testing.assert_allclose(out, (a.float() @ b.float()).numpy(), rtol=1e-6)  # float32 from the bf16 inputs; the gate rounds it


def test_a_hotspot_above_its_roof_is_named_as_a_low_ceiling_not_a_gap():
    roofs = from_file(H200_ROOFLINE, "roofline.json", "NVIDIA H200")[0]
    mm = _op("aten::mm", [[8192, 8192], [8192, 8192]], [BF16, BF16])
    trace = _gpu_trace("NVIDIA H200", [Kernel("nvjet_tst_256x128", 0.0, 1500.0, "0", "7", "kernel", op=mm)], [mm])
    a = analyse(trace, roofs)  # 2·8192³ flops in 1.5 ms: 733 TFLOP/s, above the mma.sync ceiling of 581
    spot = a.ranked[0][0]
    assert spot.percent_of_roof > 100 and spot.headroom_s == 0
    assert any("run above their roof" in f and "mma_f16" in f for f in a.findings)


def test_a_roof_measured_on_demand_goes_through_roofline_and_a_device_mismatch_is_said(workspace, monkeypatch):
    from hyperloom.tools.roofline import api as roofline_api
    from hyperloom.tools.roofline.models import RooflineResult

    asked = []

    def fake_roofline(request, ws, progress=None):  # the real one takes minutes; its own tests measure it
        asked.append(request)
        return RooflineResult.model_validate_json(H200_ROOFLINE.read_text())

    monkeypatch.setattr(roofline_api, "run_roofline", fake_roofline)
    shutil.copy(CPU, workspace.root / "cpu.json")
    result = run_profile(ProfileRequest(trace="cpu.json", roof_target="sm_90", name="ondemand", plot=False), workspace)
    assert asked[0].target == "sm_90" and asked[0].out_dir == ".hyperloom/profile/ondemand/roofline"
    assert result.roof_source == "roofline measured now on NVIDIA H200" and {c.name for c in result.roofs} >= {"copy", "mma_f16"}
    assert any("ran on NVIDIA H200, the trace on host CPU" in f for f in result.findings)


H200_LLAMA = PROFILE / "h200_llama_trace.json.gz"  # written by lab/device-runs/profile_llama.py (--fixture-kernels), committed by the lead


@pytest.mark.skipif(not H200_LLAMA.exists(), reason="the H200 capture is not committed yet: lab/device-runs/profile_llama.py writes it")
def test_the_h200_llama_capture_links_its_gemms_to_bf16_shapes_and_finds_fusion_chains():
    trace = read_trace(H200_LLAMA, "h200")
    a = analyse(trace, from_datasheet("NVIDIA H200"))
    assert trace.device_name() == "NVIDIA H200" and not trace.cpu_only
    linked = sum(k.dur_us for k in trace.kernels if k.op is not None) / sum(k.dur_us for k in trace.kernels)
    assert linked > 0.9
    gemms = [h for h, _ in a.ranked if h.kernel_class == "gemm" and h.flops_per_call]
    bf16 = [h for h in gemms if h.input_types[:2] == ["c10::BFloat16", "c10::BFloat16"]]
    # the model's projections are bf16; the rotary embedding's small inv_freq product stays float32, as transformers computes it
    assert sum(h.total_s for h in bf16) > 0.9 * sum(h.total_s for h in gemms)
    assert all(h.input_types[:2] in (["c10::BFloat16", "c10::BFloat16"], ["float", "float"]) for h in gemms)
    assert all(h.roof_tag.value == "ASSUMED" for h in gemms)  # datasheet roofs here: the device run measures its own
    assert a.fusion and a.fusion[0].bytes_saved_total > 0  # eager RMSNorm (pow, mean, rsqrt, mul) unless transformers fuses it


def test_a_convolution_s_work_is_read_from_a_real_trace_with_its_stride_padding_and_groups(tmp_path):
    """torch.profiler on this CPU, shapes recorded: each convolution op of a strided, a padded and a grouped layer
    gets 2·N·O·(C/groups)·prod(kernel)·prod(output) flops (ResNet-50's step read 262 MFLOP of GEMM on the H200, its fc
    layer alone, before convolutions had a model)."""
    torch = pytest.importorskip("torch")
    from hyperloom.tools.profile.load import read_trace

    layers = [torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.Conv2d(16, 16, 3, padding=1, groups=4, bias=False),
              torch.nn.Conv2d(16, 4, 1)]
    x = torch.randn(2, 8, 32, 32)
    with torch.profiler.profile(record_shapes=True) as prof, torch.inference_mode():
        for layer in layers:
            x = layer(x)
    prof.export_chrome_trace(str(tmp_path / "conv.json"))
    trace = read_trace(tmp_path / "conv.json", "conv.json")
    expected = {2 * 2 * 16 * 8 * 9 * 16 * 16, 2 * 2 * 16 * 4 * 9 * 16 * 16, 2 * 2 * 4 * 16 * 1 * 16 * 16}
    for name in ("aten::conv2d", "aten::convolution"):
        seen = {op_work(op).flops for op in trace.ops if op.name == name}
        assert seen == expected, (name, seen)
