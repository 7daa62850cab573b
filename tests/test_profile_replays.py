"""A replayed graph's period split into its parts (tools/profile/replays.py), on an H200 trace of a decode loop
(tests/fixtures/profile/h200_decode_loop_trace.json.gz: 31 replays of one CUDA graph, one per token); every figure the
tests check is computed again here from the raw events, not through the parser."""

from __future__ import annotations

import gzip
import json
import statistics

import pytest
from pydantic import ValidationError

from helpers import FIXTURES
from hyperloom.tools.profile.api import run_profile
from hyperloom.tools.profile.load import read_trace
from hyperloom.tools.profile.models import ProfileRequest, ReplayRoof
from hyperloom.tools.profile.replays import attribute_replays

TRACE = FIXTURES / "profile" / "h200_decode_loop_trace.json.gz"
PARAMETER_BYTES = 63185920  # decoder_small's parameters as the worker reported them (the fixture's README)


def _raw():
    """Per replay, the graph's kernels (start, end) from the raw events: kernels carrying a graph launch's correlation."""
    events = json.loads(gzip.decompress(TRACE.read_bytes()))["traceEvents"]
    launches = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"}
    replays: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in launches:
            replays.setdefault(e["args"]["correlation"], []).append((e["ts"], e["ts"] + e["dur"]))
    return sorted((sorted(r) for r in replays.values()), key=lambda r: r[0][0])


def test_a_decode_loop_s_token_period_is_split_into_the_graph_its_gaps_and_the_host_between_replays():
    raw = _raw()
    a = attribute_replays(read_trace(TRACE, "fixture"))
    assert a is not None and (a.replays, a.kernels_per_replay) == (len(raw), 75) == (31, 75)
    starts = [r[0][0] for r in raw]
    assert a.period_us == pytest.approx(statistics.median(b - s for s, b in zip(starts, starts[1:])))
    assert a.graph_busy_us == pytest.approx(statistics.median(sum(e - s for s, e in r) for r in raw))  # one stream: no overlaps
    parts = a.graph_busy_us + a.graph_gaps_us + a.outside_kernels_us + a.idle_us
    assert parts == pytest.approx(a.period_us, rel=0.05), "the parts are medians of their own; together about one period"
    assert a.idle_us > a.graph_busy_us > a.graph_gaps_us > 0  # this small decoder's token: mostly the host between replays
    assert sum(a.classes_us.values()) == pytest.approx(statistics.mean(sum(e - s for s, e in r) for r in raw))  # classes: the mean replay
    assert max(a.classes_us, key=a.classes_us.__getitem__) == "gemm" and a.classes_us["attention"] > 0
    assert a.kernels[0].name.startswith("nvjet") and sum(k.count for k in a.kernels) <= 75
    assert any("device idle between replays" in f and "capture more of the token" in f for f in a.findings), a.findings


def test_the_replay_roof_is_the_bytes_at_the_bandwidth_and_its_percent_of_the_period():
    roof = ReplayRoof(bytes_per_replay=PARAMETER_BYTES, bandwidth_gb_s=4800.0, source="datasheet (ASSUMED)")
    a = attribute_replays(read_trace(TRACE, "fixture"), roof)
    assert roof.roof_us() == pytest.approx(PARAMETER_BYTES / 4.8e12 * 1e6)
    assert a.roof_percent == pytest.approx(100 * roof.roof_us() / a.period_us)
    assert any("% of the roof" in f and "ASSUMED" in f for f in a.findings)
    rate = PARAMETER_BYTES / (a.classes_us["gemm"] * 1e3)  # GB/s: the replay's bytes over the GEMMs' time
    [gemm] = [f for f in a.findings if f.startswith("GEMMs take")]
    assert f"at most {rate:.0f} GB/s" in gemm and "fuse_projections" in gemm and "int8_weight_only" in gemm, gemm
    assert not any(f.startswith("GEMMs take") for f in attribute_replays(read_trace(TRACE, "fixture")).findings)  # no bytes: no rate


def test_a_kernel_whose_route_counted_its_bytes_is_placed_against_its_own_roof():
    """decode_gemv counts the weights it routes (each read once a replay): the kernel's bandwidth in the replay, and the
    share of the memory ceiling it reaches (issue 46: how close each kept kernel is to its own roof)."""
    roof = ReplayRoof(bytes_per_replay=PARAMETER_BYTES, bandwidth_gb_s=4800.0, source="datasheet (ASSUMED)")
    top = attribute_replays(read_trace(TRACE, "fixture")).kernels[0]
    a = attribute_replays(read_trace(TRACE, "fixture"), roof, {top.name: 40_000_000, "a kernel not in the trace": 1})
    kernel = a.kernels[0]
    assert kernel.bytes == 40_000_000 and kernel.gb_s() == pytest.approx(40_000_000 / (kernel.us * 1e3)) and a.kernels[1].bytes is None
    [said] = [f for f in a.findings if f.startswith(f"{top.name} reads 40.0 MB")]
    assert f"{kernel.gb_s():.0f} GB/s, {100 * kernel.gb_s() / 4800:.0f} % of 4800 GB/s" in said and ("own roof "
                                                                                                     f"{40_000_000 / 4.8e12 * 1e6:.1f} "
                                                                                                     "us") in said, said
    assert any("no memory ceiling" in f for f in attribute_replays(read_trace(TRACE, "fixture"), None, {top.name: 1000}).findings)


def test_a_trace_without_a_replayed_graph_has_no_replay_attribution():
    assert attribute_replays(read_trace(FIXTURES / "profile" / "a100_alexnet_trace.json.gz", "alexnet")) is None
    trace = read_trace(TRACE, "fixture")
    trace.graph_launches = trace.graph_launches[:1]  # one capture replayed once: no period
    assert attribute_replays(trace) is None
    trace.graph_launches = [10**12]  # a launch no kernel carries
    assert attribute_replays(trace) is None


def test_profile_reports_the_replay_and_its_roof_at_the_device_s_memory_ceiling(workspace):
    (workspace.root / "t.json.gz").write_bytes(TRACE.read_bytes())
    result = run_profile(ProfileRequest(trace="t.json.gz", bytes_per_replay=PARAMETER_BYTES, plot=False), workspace)
    assert result.replays is not None and result.replays.roof is not None
    assert "ASSUMED" in result.replays.roof.source and result.replays.roof.bandwidth_gb_s > 1000  # the H200's datasheet
    report = (workspace.root / next(f for f in result.files if f.endswith("report.md"))).read_text()
    assert "## One replay of the graph (31 replays, 75 kernels each)" in report and "% of the roof" in report
    bare = run_profile(ProfileRequest(trace="t.json.gz", plot=False, name="bare"), workspace)
    assert bare.replays is not None and bare.replays.roof is None


@pytest.mark.parametrize("bad", [0, -5, 10**16])
def test_a_replay_byte_count_out_of_range_is_refused_naming_the_field(bad):
    with pytest.raises(ValidationError, match="bytes_per_replay"):
        ProfileRequest(trace="t.json", bytes_per_replay=bad)


def test_the_replay_roof_is_read_at_the_copy_rate_measured_in_the_profiled_process_else_at_a_ceiling():
    from hyperloom.tools.profile import roof
    from hyperloom.tools.profile.api import replay_roof

    roofs, findings = roof.from_datasheet("NVIDIA H200"), []
    measured = replay_roof(PARAMETER_BYTES, roofs, findings, {"copy_gb_s": 4236.0, "copy_bytes": 1 << 30})
    assert measured is not None and measured.bandwidth_gb_s == 4236.0 and "1024 MiB in the profiled process, MEASURED" in measured.source
    assert measured.roof_us() == pytest.approx(PARAMETER_BYTES / 4236e3)
    datasheet = roofs.memory()
    assert datasheet is not None and len(findings) == 1 and f"{datasheet.value:.0f} GB/s (ASSUMED) instead" in findings[0]
    findings = []
    fallback = replay_roof(PARAMETER_BYTES, roofs, findings, {"copy_skipped": "300 MiB free on the device"})
    assert fallback is not None and fallback.bandwidth_gb_s == datasheet.value and "ASSUMED" in fallback.source
    assert "not measured (300 MiB free on the device)" in findings[0]
    assert replay_roof(PARAMETER_BYTES, roof.from_datasheet(None), [], {"copy_skipped": "no GPU"}) is None


class _Event:
    def __init__(self, clock: list[float], **_):
        self.clock, self.at = clock, 0.0

    def record(self):
        self.clock[0] += 0.5  # each copy: 0.5 ms between its events
        self.at = self.clock[0]

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.at - self.at + 0.5


class _FakeCuda:
    """torch.cuda as device_copy calls it: free memory as given, events 1 ms apart around each copy."""

    def __init__(self, free_bytes: int, raises: bool = False):
        self.free_bytes, self.raises, self.clock, self.sizes = free_bytes, raises, [0.0], []

    def is_available(self):
        return True

    def mem_get_info(self):
        return self.free_bytes, 80 << 30

    def Event(self, **kw):  # noqa: N802 (torch's name)
        return _Event(self.clock, **kw)

    def empty_cache(self):
        pass


class _Buffer:
    def copy_(self, other):
        return self


def test_the_device_copy_sizes_its_buffers_to_the_free_memory_and_skips_with_the_reason_when_too_little():
    import types

    from hyperloom.tools.profile.copy_rate import COPY_BYTES, MIN_BYTES, device_copy

    def fake(free_bytes, raises=False):
        cuda = _FakeCuda(free_bytes, raises)

        def empty(size, **_):
            if raises:
                raise RuntimeError("CUDA out of memory. Tried to allocate 1.00 GiB\nmore")
            cuda.sizes.append(size)
            return _Buffer()
        return types.SimpleNamespace(cuda=cuda, empty=empty, empty_like=lambda t: _Buffer(), uint8="uint8")

    roomy = fake(80 << 30)
    got = device_copy(roomy)
    assert roomy.cuda.sizes == [COPY_BYTES] and got["copy_bytes"] == COPY_BYTES
    assert got["copy_gb_s"] == pytest.approx(2 * COPY_BYTES / 1e6)  # read + written over 1 ms
    tight = fake(2 << 30)
    assert device_copy(tight)["copy_bytes"] == (2 << 30) // 4 and tight.cuda.sizes == [(2 << 30) // 4]
    assert "the copy needs 2 x 256 MiB" in device_copy(fake(MIN_BYTES * 3))["copy_skipped"]
    assert "could not be allocated (CUDA out of memory" in device_copy(fake(80 << 30, raises=True))["copy_skipped"]
    assert (device_copy(types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False)))
            == {"copy_skipped": "no GPU in the profiled process"})


def test_a_capture_carries_the_copy_rate_its_worker_measured():
    from pathlib import Path

    from hyperloom.tools.profile.workload import capture_of

    report = {"torch": "2.11", "gpu": True, "device": "NVIDIA H200", "step_wall_s": [0.1], "profiler_device_time_s": None,
              "copy_gb_s": 4236.0, "copy_bytes": 1 << 30}
    assert capture_of(report, Path("t"), Path("k")).extra["copy_gb_s"] == 4236.0
    skipped = {key: value for key, value in report.items() if not key.startswith("copy")} | {"copy_skipped": "no GPU"}
    extra = capture_of(skipped, Path("t"), Path("k")).extra
    assert extra["copy_skipped"] == "no GPU" and "copy_gb_s" not in extra
