"""GPU paths, run where an NVIDIA GPU and cuda-python are present (the lent H200 ran them); skipped elsewhere."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from helpers import FIXTURES, REPO
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench

HAS_CUDA = importlib.util.find_spec("cuda") is not None and shutil.which("nvidia-smi") is not None and (
    shutil.which("nvcc") is not None or __import__("pathlib").Path("/usr/local/cuda/bin/nvcc").exists()
)
pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs an NVIDIA GPU with its driver, nvcc and cuda-python")


def test_the_copy_kernel_is_gated_and_timed_on_the_gpu(workspace):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    result = run_bench(BenchRequest(spec="copy", variant="gpu", target="sm_90", max_time_s=2.0), workspace)
    assert result.ok and result.backend == "cuda" and all(v.passed for v in result.gate)
    assert result.kernel.median_s > 0 and result.flush_bytes >= 2 * result.cache_bytes


def test_an_illegal_address_is_a_crash_and_the_gpu_stays_usable(workspace):
    shutil.copytree(FIXTURES / "specs" / "faults", workspace.root / "faults")
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    crashed = run_bench(BenchRequest(spec="faults", variant="oob", target="sm_90", adversarial=False), workspace)
    assert not crashed.ok and crashed.gate[0].status == "CRASH"
    assert run_bench(BenchRequest(spec="copy", variant="gpu", target="sm_90", max_time_s=1.0), workspace).ok


ROW, TILED, GROUPED, SPLIT = "decode/w4a16", "decode/w4a16_tiled", "decode/w4a16_grouped", "decode/w4a16_split"


@pytest.mark.parametrize(
    ("spec", "variant", "shape", "params"),
    [
        # packing.py's row layout
        (ROW, "mma", 0, {}), (ROW, "mma", 4, {}),  # 4096² at one tile a block; 128256 rows at two (one of each kind of block)
        (ROW, "mma", 5, {}), (ROW, "mma", 5, {"tiles": 2, "warps": 2}),  # batch 8, group 32
        # a partial 16-row tile at batch 3; idle warps (2 steps over 8 warps)
        (ROW, "mma", 6, {}), (ROW, "mma", 6, {"tiles": 1, "HL_UNROLL": 2}),
        # k = 352: the last step is partial
        (ROW, "mma", 7, {}), (ROW, "mma", 7, {"tiles": 4, "warps": 1, "HL_UNROLL": 2, "HL_PREFETCH": 256}),
        (ROW, "mma", 2, {"tiles": 8, "warps": 4, "HL_PREFETCH": 128}),  # 4 tile pairs a block, in turn
        # the tile layout, register stages
        (TILED, "mma", 0, {}), (TILED, "mma", 4, {}),  # one tile a block; two
        (TILED, "mma", 5, {}), (TILED, "mma", 5, {"tiles": 2, "warps": 2, "HL_UNROLL": 1}),  # batch 8, group 32 (two groups per 64-k block)
        # a partial last tile at batch 3; idle warps (4 blocks over 8 warps)
        (TILED, "mma", 6, {}), (TILED, "mma", 6, {"tiles": 1, "HL_UNROLL": 4}),
        # 4 tile pairs a block, in turn; a k range not a multiple of the unroll
        (TILED, "mma", 2, {"tiles": 8, "warps": 4, "HL_UNROLL": 4}),
        # the tile layout, the cp.async ring
        (TILED, "mma_async", 0, {}), (TILED, "mma_async", 4, {}), (TILED, "mma_async", 5, {}), (TILED, "mma_async", 6, {}),  # 4 ring stages
        # the shallowest and the deepest ring
        (TILED, "mma_async", 4, {"stages": 2, "tiles": 1}), (TILED, "mma_async", 3, {"stages": 8, "warps": 4}),
        (TILED, "mma_async", 6, {"stages": 8, "warps": 2, "tiles": 1}),  # a ring deeper than the warp's blocks (2 of them)
        (TILED, "mma_async", 2, {"stages": 4, "tiles": 8, "warps": 8}),  # tile pairs in turn: the ring drained between them
        (TILED, "mma_async", 1, {"stages": 8, "warps": 8, "tiles": 4}),  # 80 KB of ring: past the 48 KB a launch gets unasked
        (TILED, "mma_async", 5, {"stages": 2, "warps": 1}),  # one warp: no partial sums to add
        # four tiles a ring stage
        (TILED, "mma_async4", 4, {"tiles": 4}), (TILED, "mma_async4", 5, {"tiles": 4, "warps": 8, "stages": 8}),  # 160 KB of ring
        (TILED, "mma_async4", 6, {"tiles": 8, "warps": 2}),  # 7 tiles: four, then a pair, then one
        # grouped tiles (four tiles' blocks side by side)
        # 7 tiles: a group, then 3
        (GROUPED, "mma_async4", 6, {}), (GROUPED, "mma_async4", 5, {"warps": 2}), (GROUPED, "mma", 6, {"tiles": 8}),
        (GROUPED, "mma_async", 6, {"tiles": 1}),  # tiles one at a time in grouped memory (bench/decode_gpu.py gates 128256 rows)
        # k split over blocks, combined through the scratch workspace
        # 3 splits; more splits than k blocks
        (SPLIT, "mma_async4", 6, {}), (SPLIT, "mma_async", 6, {"splits": 8}), (SPLIT, "mma", 6, {"splits": 2, "warps": 2}),
        (SPLIT, "mma_async4", 3, {}), (SPLIT, "mma_async", 0, {}), (SPLIT, "mma_async", 5, {}),  # 28672x8192 in 4; 4096² in 4; batch 8
        (SPLIT, "mma", 6, {"splits": 1}),  # one split stores y itself, past the workspace
    ],
)
def test_the_tensor_core_decodes_pass_their_gates_on_every_input_set(workspace, spec, variant, shape, params):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    result = run_bench(BenchRequest(spec=spec, variant=variant, target="sm_90", shape=shape, max_time_s=0.3, params=params), workspace)
    assert result.ok, result.summary
    assert [v.input_set for v in result.gate] == ["seeded", "zeros", "ones"] and all(v.passed for v in result.gate)


def test_an_async_launch_without_room_for_two_stages_is_a_crash_and_the_gpu_stays_usable(workspace):
    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    crashed = run_bench(BenchRequest(spec=TILED, variant="mma_async", target="sm_90", shape=6, params={"stages": 1},
                                     adversarial=False), workspace)
    assert not crashed.ok and crashed.gate[0].status == "CRASH", crashed.summary
    assert run_bench(BenchRequest(spec=TILED, variant="mma_async", target="sm_90", shape=6, max_time_s=0.3), workspace).ok


def test_the_int6_device_kernels_pack_and_unpack_torch_tensors_bit_for_bit_as_torch_ops():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    from hyperloom.tools.allreduce import torch_codec
    from hyperloom.tools.allreduce.device_codec import codec_for

    device = torch.device("cuda", 0)
    choice = codec_for(torch, device, "kernels")
    assert choice.kernels is not None and choice.description.startswith("device kernels"), choice.description
    generator = torch.Generator().manual_seed(3)
    codes = torch.randint(-32, 32, (4 * 100_003,), generator=generator, dtype=torch.int16).to(device)
    packed = choice.kernels.encode(codes)
    assert torch.equal(packed, torch_codec.pack_int6(codes))
    acc = torch.randint(-900, 900, codes.shape, generator=generator, dtype=torch.int16).to(device)
    expected = acc + torch_codec.unpack_int6(packed)
    choice.kernels.decode_into(packed, acc, add=True)
    assert torch.equal(acc, expected)
    choice.kernels.decode_into(packed, acc, add=False)
    assert torch.equal(acc, codes)


def test_the_kernel_is_timed_without_the_hosts_launch_latency(workspace):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    result = run_bench(BenchRequest(spec="copy", variant="gpu", target="sm_90", max_time_s=1.0, flush_mode="read", adversarial=False),
                       workspace)
    assert result.ok and result.late_reps <= result.kernel.n // 10, result.summary  # a busy host may be late now and then
    assert result.kernel.median_s < result.wall.median_s  # the wall clock keeps the launch latency the events leave out


def test_a_read_flush_times_the_copy_and_says_so(workspace):
    shutil.copytree(REPO / "kernels" / "microbench" / "copy", workspace.root / "copy")
    result = run_bench(BenchRequest(spec="copy", variant="gpu", target="sm_90", max_time_s=1.0, flush_mode="read", adversarial=False),
                       workspace)
    assert result.ok and result.flush_mode == "read" and result.flush_bytes >= 2 * result.cache_bytes


def test_a_split_decode_leaves_its_counters_zero_and_gives_the_same_bits_every_launch(workspace):
    """Timed reps reuse the scratch workspace: a counter left non-zero would make a later launch combine early
    and store partial sums, which no gate sees (it checks one launch). Three launches on one workspace here:
    the same y bits each time (splits are added in split order, whatever the arrival order), equal to the
    reference within the tolerance, and every counter zero after each."""
    import numpy as np

    from hyperloom.tools.pipeline.launch import arg_specs, prepare
    from hyperloom.tools.pipeline.build import build_with
    from hyperloom.tools.pipeline.trial import stage_input_set
    from hyperloom.tools.runtime.drivers import Driver
    from hyperloom.tools.runtime.gpu import dims, upload
    from hyperloom.tools.kernelspec.load import load_spec

    shutil.copytree(REPO / "kernels" / "decode", workspace.root / "decode")
    launchable, build = build_with(prepare(load_spec(workspace.root / SPLIT, workspace), "mma_async4", "sm_90", 6), workspace, {})
    folder = workspace.root / "run"
    stage_input_set(launchable, "seeded", folder)
    driver = Driver("cuda", 0)
    function = driver.function(driver.load((workspace.root / build.code_object).read_bytes()), launchable.variant.entry)
    args = {arg.name: arg for arg in arg_specs(launchable, folder, folder)}
    pointers, params = upload(driver, list(args.values()))

    def read(name: str) -> np.ndarray:
        host = np.empty(args[name].shape, dtype=args[name].dtype)
        driver.dtoh(host.ctypes.data, pointers[name], host.nbytes)
        return host

    outputs = []
    for _ in range(3):
        driver.launch(function, dims(launchable.grid), dims(launchable.block), launchable.shared_bytes, params)
        driver.synchronize()
        outputs.append(read("y"))
        assert not read("counters").any()
    assert launchable.grid[1] == 3 and all(np.array_equal(outputs[0], y) for y in outputs[1:])
    expected = np.load(folder / "ref_y.npy")
    assert np.allclose(outputs[0], expected, atol=2e-3, rtol=1e-5)
