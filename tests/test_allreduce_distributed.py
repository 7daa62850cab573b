"""The torch.distributed implementation: its codec equals numpy's, and real gloo ranks equal the reference bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pytest
import torch

from helpers import save
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce import quantize as ref
from hyperloom.tools.allreduce import torch_codec
from hyperloom.tools.allreduce.api import run_allreduce
from hyperloom.tools.allreduce.launch import check_backend, run_ranks
from hyperloom.tools.allreduce.models import AllreduceRequest
from hyperloom.tools.allreduce.reference import Scheme


def adversarial(n: int) -> np.ndarray:
    """Ties at half steps, block maxima, denormals, zeros and ordinary values, mixed."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    x[::7] = (rng.integers(-15, 15, x[::7].size) + 0.5) / 15
    x[::64] = 1.0
    x[3::11] = rng.uniform(-1, 1, x[3::11].size).astype(np.float32) * np.float32(2.0**-130)
    x[5::13] = 0.0
    x[1000:1128] = np.float32(1e-41)  # a block of denormals only
    return x


@pytest.mark.parametrize("rounding", ["nearest", "stochastic"])
@pytest.mark.parametrize("q_max", [1, 15, 31])
def test_torch_scales_and_codes_equal_numpy_bit_for_bit(rounding, q_max):
    x = adversarial(4096 + 64)
    amax = ref.block_amax(x, 64)
    assert np.array_equal(torch_codec.block_amax(torch.from_numpy(x), 64).numpy(), amax)
    scales = ref.shared_scales(amax, q_max)
    assert np.array_equal(torch_codec.shared_scales(torch.from_numpy(amax), q_max).numpy(), scales)
    codes = ref.quantize(x, scales, 64, q_max, rounding, seed=2**40 + 3, rank=1)
    on_torch = torch_codec.quantize(torch.from_numpy(x), torch.from_numpy(scales), 64, q_max, rounding, 2**40 + 3, 1)
    assert np.array_equal(on_torch.numpy(), codes) and np.abs(codes).max() <= q_max
    sums = (codes.astype(np.int16) * 3)
    assert np.array_equal(torch_codec.dequantize(torch.from_numpy(sums), torch.from_numpy(scales), 64).numpy(),
                          ref.dequantize(sums, scales, 64))


def test_the_hash_stream_differs_by_rank_and_seed_and_is_uniform():
    idx = np.arange(1 << 16, dtype=np.int64)
    a, b, c = ref.uniform_bits(idx, 0, 0), ref.uniform_bits(idx, 0, 1), ref.uniform_bits(idx, 1, 0)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    assert abs(a.mean() / 2**24 - 0.5) < 0.01 and a.max() < 2**24 and a.min() >= 0
    assert np.array_equal(ref.uniform_bits(torch.from_numpy(idx), 5, 3).numpy(), ref.uniform_bits(idx, 5, 3))


@pytest.mark.parametrize(
    ("dtype", "rounding", "partial_sums", "ranks"),
    [("float32", "nearest", "fit_int6", 2), ("bfloat16", "stochastic", "widen", 2), ("float16", "nearest", "widen", 3)],
)
def test_gloo_ranks_equal_the_numpy_reference_bit_for_bit(workspace, dtype, rounding, partial_sums, ranks):
    request = AllreduceRequest(
        ranks=ranks, shape=[37, 29], dtype=dtype, distribution="outliers", rounding=rounding, partial_sums=partial_sums,
        block=32, seed=5, backend="gloo", timeout_s=120,
    )
    result = run_allreduce(request, workspace)
    assert result.matches_reference is True, result.summary
    assert result.bit_identical_across_ranks and result.within_bound and result.cross_rank_drift == 0
    assert result.evidence.toolchain["torch"] == torch.__version__ and "gloo ranks" in result.evidence.device
    numpy_run = run_allreduce(request.model_copy(update={"backend": "numpy", "out": "numpy.npy"}), workspace)
    assert (workspace.root / result.out).read_bytes() == (workspace.root / "numpy.npy").read_bytes()
    assert result.wire.wire_bytes_per_rank == numpy_run.wire.wire_bytes_per_rank  # counted by the ranks themselves


def test_a_nan_on_one_gloo_rank_is_the_same_clear_error_on_every_rank(workspace):
    x = np.ones(100, np.float32)
    y = x.copy()
    y[7] = np.nan
    paths = [save(workspace, "x.npy", x), save(workspace, "y.npy", y)]
    with pytest.raises(HyperloomError, match=r"non-finite.*rank 1: 1\)"):
        run_allreduce(AllreduceRequest(inputs=paths, backend="gloo", timeout_s=120), workspace)


def test_gloo_ranks_that_disagree_on_the_shape_fail_together_instead_of_hanging(tmp_path):
    inputs = []
    for rank, n in enumerate((16, 20)):
        inputs.append(str(tmp_path / f"in{rank}.npy"))
        np.save(inputs[-1], np.ones(n, np.float32))
    job = {"mode": "run", "backend": "gloo", "inputs": inputs, "kind": "float32", "scheme": asdict(Scheme()), "timeout_s": 60,
           "codec": "auto"}
    with pytest.raises(HyperloomError,
                       match=r"disagree.*rank 0: dtype torch.float32, shape \[16\].*rank 1: dtype torch.float32, shape \[20\]"):
        run_ranks(job, 2, tmp_path, timeout_s=120)


def test_nccl_without_gpus_is_refused_before_anything_starts():
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this host has GPUs: the nccl refusal cannot be observed")
    with pytest.raises(HyperloomError, match="one GPU per rank"):
        check_backend("nccl", 2)


def test_without_torch_the_package_imports_and_the_distributed_backends_name_the_extra(tmp_path):
    probe = r"""
import sys, json
sys.modules["torch"] = None  # as if torch were not installed
from pathlib import Path
from hyperloom.core.workspace import Workspace
from hyperloom.core.errors import HyperloomError
from hyperloom.mcp_server.server import build_server
from hyperloom.tools.allreduce.api import run_allreduce
from hyperloom.tools.allreduce.models import AllreduceRequest
ws = Workspace(Path(sys.argv[1]))
build_server()
ok = run_allreduce(AllreduceRequest(ranks=2, shape=[8]), ws).within_bound
try:
    run_allreduce(AllreduceRequest(ranks=2, shape=[8], backend="gloo"), ws)
    message = None
except HyperloomError as exc:
    message = str(exc)
print(json.dumps({"ok": ok, "message": message}))
"""
    proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and "hyperloom[distributed]" in report["message"] and "torch is not installed" in report["message"]


def test_cpu_ranks_use_torch_ops_and_say_so_and_demanding_the_kernels_there_is_refused(workspace):
    from hyperloom.tools.allreduce.device_codec import codec_for

    cpu = torch.device("cpu")
    assert codec_for(torch, cpu, "auto").kernels is None and "CPU" in codec_for(torch, cpu, "auto").description
    assert codec_for(torch, cpu, "torch").description == "torch ops (asked for)"
    with pytest.raises(HyperloomError, match="runs the INT6 device kernels on a GPU") as error:
        codec_for(torch, cpu, "kernels")
    assert "nccl" in error.value.next_step
    result = run_allreduce(AllreduceRequest(ranks=2, shape=[64], backend="gloo", timeout_s=120), workspace)
    assert result.codec == "torch ops (CPU tensors)" and result.matches_reference


@pytest.mark.parametrize(("version", "properties", "capability", "target"), [
    (None, None, (9, 0), "sm_90"), (None, None, (8, 6), "sm_86"), ("6.2", "gfx942:sramecc+:xnack-", None, "gfx942"),
    ("6.4", "gfx1201", None, "gfx1201"),
])
def test_the_kernels_are_built_for_the_devices_own_target(version, properties, capability, target):
    from types import SimpleNamespace

    from hyperloom.tools.allreduce.device_codec import device_target

    fake = SimpleNamespace(version=SimpleNamespace(hip=version), cuda=SimpleNamespace(
        get_device_capability=lambda device: capability, get_device_properties=lambda device: SimpleNamespace(gcnArchName=properties)))
    assert device_target(fake, "cuda:0") == target


def test_on_a_gpu_without_a_toolchain_auto_falls_back_to_torch_ops_and_kernels_says_why(monkeypatch):
    from hyperloom.tools.allreduce import device_codec

    def no_toolchain(torch_module, device):
        raise HyperloomError("the INT6 kernels do not build for sm_90: nvcc was not found", "install the toolchain")

    monkeypatch.setattr(device_codec, "DeviceCodec", no_toolchain)
    monkeypatch.setattr(device_codec, "_CHOSEN", {})
    gpu = torch.device("cuda", 0)  # never touched: the build fails first
    auto = device_codec.codec_for(torch, gpu, "auto")
    assert auto.kernels is None and auto.description.startswith("torch ops (device kernels unavailable") and "nvcc" in auto.description
    with pytest.raises(HyperloomError, match="cannot run here.*nvcc") as error:
        device_codec.codec_for(torch, gpu, "kernels")
    assert "codec auto or torch" in error.value.next_step
