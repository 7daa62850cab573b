"""A step's Trace from torch.profiler's raw events (tools/profile/kineto.py) weighs the same as the one read back from
its Chrome JSON: proof of work can skip the file. On a CPU against the JSON here; on a GPU from torch 2.11's raw events
as the H200 gave them (a captured fixture: results/h200/workload-gate/kineto/kineto_fields.torch211.jsonl)."""

from __future__ import annotations

import enum
import json
from pathlib import Path

import pytest

from hyperloom.tools.profile.capture import export_json
from hyperloom.tools.profile.kineto import trace_of
from hyperloom.tools.workload.work import step_work, work_of

torch = pytest.importorskip("torch")


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down, self.norm = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64), torch.nn.LayerNorm(64)

    def forward(self, x):
        q = k = v = x.view(2, 4, 64, 16)
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v).reshape(x.shape)
        return self.norm(x + self.down(torch.nn.functional.gelu(self.up(attended)))) @ torch.randn(64, 32, dtype=x.dtype)


def _profiled(dtype):
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model, x = Block().to(dtype), torch.randn(2, 64, 64).to(dtype)
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x).float().sum().item()
    return prof


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_raw_events_weigh_a_cpu_step_as_its_chrome_json_does(tmp_path, dtype):
    prof = _profiled(getattr(torch, dtype))
    raw = trace_of(prof)
    assert raw is not None and raw.cpu_only and raw.ops
    path = tmp_path / "trace.json"
    export_json(prof, str(path), checked=False)
    from_json, from_raw = step_work(path, 1000), work_of(raw, 1000)
    assert from_raw.compute_flops_by_dtype == from_json.compute_flops_by_dtype and from_raw.compute_flops_by_dtype
    for name, expected in from_json.classes.items():
        got = from_raw.classes[name]
        assert (got.ops, got.flops, got.bytes_moved) == (expected.ops, expected.flops, expected.bytes_moved), name
        assert got.time_s == pytest.approx(expected.time_s, rel=1e-3, abs=1e-6), name
    assert from_json.classes["gemm"].flops > 0 and from_json.classes["attention"].ops == 1


def test_no_raw_trace_without_kineto_results_or_operators():
    class Bare:
        profiler = None

    assert trace_of(Bare()) is None

    class Empty:
        class profiler:  # noqa: N801 - torch's attribute names
            class kineto_results:  # noqa: N801
                @staticmethod
                def events():
                    return []

    assert trace_of(Empty()) is None


class _Without:
    """A raw event without the named fields (`missing`), as an older torch gives it."""

    def __init__(self, event, missing):
        self._event, self._missing = event, missing

    def __getattr__(self, name):
        if name in self._missing:
            raise AttributeError(name)
        return getattr(self._event, name)


def _session(events):
    class Session:
        class profiler:  # noqa: N801 - torch's attribute names
            class kineto_results:  # noqa: N801
                @staticmethod
                def events():
                    return events

    return Session()


def test_raw_events_without_a_field_read_give_the_json_path():
    from hyperloom.tools.profile.kineto import EVENT_FIELDS

    real = _profiled(torch.float32).profiler.kineto_results.events()
    assert real and all(hasattr(real[0], field) for field in EVENT_FIELDS)
    assert trace_of(_session([_Without(e, {"linked_correlation_id"}) for e in real])) is None


def test_without_activity_type_the_host_events_are_told_apart_by_their_fields():
    """torch 2.11's raw events have no `activity_type` (the H200 image's torch: reading it raised inside every profiled
    step): the same operators, linked the same, from their other fields."""
    real = _profiled(torch.float32).profiler.kineto_results.events()
    typed = trace_of(_session(real))
    untyped = trace_of(_session([_Without(e, {"activity_type"}) for e in real]))
    assert typed is not None and untyped is not None and typed.ops
    assert [(o.name, o.dims, o.ext_id) for o in untyped.ops] == [(o.name, o.dims, o.ext_id) for o in typed.ops]


FIXTURE = Path(__file__).resolve().parents[1] / "results" / "h200" / "workload-gate" / "kineto" / "kineto_fields.torch211.jsonl"


class _DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1


class _Captured:
    """One raw event as lab/raw-profiler-events/kineto_fields.py printed it on the H200 (torch 2.11.0+cu130): the fields torch
    had answer, those it lacked raise AttributeError."""

    def __init__(self, row):
        self._row = row

    def __getattr__(self, name):
        value = self._row.get(name, "<AttributeError>")
        if isinstance(value, str) and value.startswith("<") and value.endswith("Error>"):
            raise AttributeError(name)
        if name == "device_type":
            value = _DeviceType[value.split(".")[-1]]
        return lambda: value


def test_a_gpu_step_from_torch_2_11_s_raw_events_links_each_kernel_to_its_operator():
    """nn.Linear(256, 128) on a 4 x 256 bf16 input, then .float().sum().item(), on the H200: cuBLAS's kernel is the
    work of aten::addmm, the copy kernel aten::copy_'s, the device-to-host copy _local_scalar_dense's; the runtime and
    driver calls, cudaDeviceSynchronize outside any operator and the profiler's own events are not operators."""
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.startswith("{")]
    trace = trace_of(_session([_Captured(row) for row in rows]))
    assert trace is not None and not trace.cpu_only
    def launched(start):
        [kernel] = [k for k in trace.kernels if k.name.startswith(start)]
        return kernel.kind, kernel.op.name if kernel.op else None, kernel.device, kernel.stream

    assert launched("nvjet_sm90") == ("kernel", "aten::addmm", "0", "7")
    assert launched("Memcpy DtoH") == ("memcpy", "aten::_local_scalar_dense", "0", "7")
    assert launched("void at::native::unrolled_elementwise_kernel<at::native::direct_copy") == ("kernel", "aten::copy_", "0", "7")
    names = {op.name for op in trace.ops}
    assert {"aten::linear", "aten::addmm", "aten::copy_", "aten::item"} <= names
    assert not names & {"cudaLaunchKernel", "cuLaunchKernelEx", "cudaDeviceSynchronize", "Activity Buffer Request", "Lazy Function Loading"}
    work = work_of(trace, 1000)
    assert work.device_timed and work.classes["gemm"].ops == 1 and work.classes["gemm"].flops == 2 * 4 * 256 * 128
    assert work.classes["gemm"].time_s == pytest.approx(2.561e-6)
