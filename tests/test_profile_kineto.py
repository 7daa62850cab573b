"""A CPU step's Trace from torch.profiler's raw events (tools/profile/kineto.py) weighs the same as the one read back
from its Chrome JSON: proof of work can skip the file on a CPU."""

from __future__ import annotations

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


def test_raw_events_without_a_field_read_give_the_json_path():
    """torch 2.11's raw events have no `activity_type` (the H200 image's torch): reading it raised inside every
    profiled step; the Trace is then None and the caller writes the JSON."""
    from hyperloom.tools.profile.kineto import EVENT_FIELDS

    prof = _profiled(torch.float32)
    real = prof.profiler.kineto_results.events()
    assert real and all(hasattr(real[0], field) for field in EVENT_FIELDS)

    class OlderEvent:
        def __getattr__(self, name):
            if name == "activity_type":
                raise AttributeError(name)
            return getattr(real[0], name)

    class Older:
        class profiler:  # noqa: N801 - torch's attribute names
            class kineto_results:  # noqa: N801
                @staticmethod
                def events():
                    return [OlderEvent()]

    assert trace_of(Older()) is None
