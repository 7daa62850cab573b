"""The GPU benchmark scripts' own logic (their GPU parts run on the device; see results/h200)."""

from __future__ import annotations

import sys

import pytest

from helpers import REPO

pytest.importorskip("torch")
sys.path.insert(0, str(REPO / "bench"))
import decode_gpu  # noqa: E402  (bench/ is a folder of scripts, not a package)


def table(ours_us: float, torch_us: float, percent: float, gated: bool = True) -> list[dict]:
    rows = []
    for n, k in decode_gpu.SHAPES:
        rows.append({"shape": f"{n}x{k}", "method": "hyperloom w4a16 mma", "time_us": ours_us if gated else None,
                     "percent_of_read": percent if gated else None})
        rows.append({"shape": f"{n}x{k}", "method": "hyperloom w4a16 simt", "time_us": 10 * ours_us, "percent_of_read": percent / 10})
        rows.append({"shape": f"{n}x{k}", "method": "torch int4pack_mm", "time_us": torch_us, "percent_of_read": None})
    return rows


def reads(time_us: float = 1.0, percent: float = 95.0) -> dict[str, dict[str, float]]:
    """The same-size read at every shape: by default fast enough that every target is within reach."""
    return {f"{n}x{k}": {"time_us": time_us, "percent_of_read": percent} for n, k in decode_gpu.SHAPES}


def test_the_targets_are_met_only_at_2x_torch_and_90_percent_of_read_on_the_three_largest_shapes():
    met = decode_gpu.issue_verdicts(table(ours_us=10.0, torch_us=20.0, percent=90.0), reads())
    assert [v["torch_target_met"] for v in met] == [True] * 5
    assert [v["read_target_met"] for v in met] == [None, None, True, True, True]
    assert all(v["best"] == "hyperloom w4a16 mma" for v in met)
    short = decode_gpu.issue_verdicts(table(ours_us=10.0, torch_us=19.9, percent=89.9), reads())
    assert not any(v["torch_target_met"] for v in short) and [v["read_target_met"] for v in short][2:] == [False] * 3
    assert all(v["torch_target_reachable"] for v in short) and [v["read_target_reachable"] for v in short] == [None, None, True, True, True]
    assert all("out of reach" not in decode_gpu.verdict_line(v) for v in short)


def test_a_target_the_read_of_the_same_bytes_misses_is_reported_out_of_reach():
    slow = decode_gpu.issue_verdicts(table(ours_us=10.0, torch_us=19.0, percent=80.0), reads(time_us=9.6, percent=89.0))
    assert not any(v["torch_target_reachable"] for v in slow)  # 2x torch needs 9.5 us; reading the weights alone takes 9.6
    assert [v["read_target_reachable"] for v in slow] == [None, None, False, False, False]
    line = decode_gpu.verdict_line(slow[4])
    assert line.count("NOT met, out of reach here") == 2 and "9.60 us, 89.0 % of read" in line
    edge = decode_gpu.issue_verdicts(table(ours_us=10.0, torch_us=19.0, percent=80.0), reads(time_us=9.5, percent=90.0))
    assert all(v["torch_target_reachable"] for v in edge) and all(v["read_target_reachable"] for v in edge[2:])


def test_a_kernel_that_fails_its_gate_is_not_counted():
    verdicts = decode_gpu.issue_verdicts(table(ours_us=1.0, torch_us=20.0, percent=99.0, gated=False), reads())
    assert all(v["best"] == "hyperloom w4a16 simt" for v in verdicts)  # the fast mma failed its gate: the SIMT row is judged
    assert all(v["x_torch_int4"] == 2.0 and v["percent_of_read"] == pytest.approx(9.9) for v in verdicts)
    assert [v["read_target_met"] for v in verdicts] == [None, None, False, False, False]


def test_a_shape_without_a_gated_kernel_misses_both_targets():
    rows = [r for r in table(ours_us=1.0, torch_us=20.0, percent=99.0, gated=False) if "simt" not in r["method"]]
    verdicts = decode_gpu.issue_verdicts(rows, reads())
    assert all(v["best"] is None and not v["torch_target_met"] for v in verdicts)
    assert "no Hyperloom kernel passed its gate" in decode_gpu.verdict_line(verdicts[0])


def test_each_shape_is_compared_with_a_read_of_the_bytes_its_kernels_count():
    from hyperloom.tools.kernelspec.expr import evaluate_int
    from helpers import loaded_spec

    spec = loaded_spec(REPO / "kernels" / "decode" / "w4a16_tiled" / "kernel.yaml").spec
    for index, (n, k) in enumerate(decode_gpu.SHAPES):
        shape = spec.shapes[index]
        assert (shape["n"], shape["k"], shape["m"], shape["group"]) == (n, k, 1, decode_gpu.GROUP)
        assert decode_gpu.decode_bytes(n, k) == evaluate_int(spec.metric.bytes, shape, "metric bytes")


def test_a_tune_session_starts_from_the_rows_launches_of_the_variants_it_searches():
    assert decode_gpu.warm_start(4, ["mma", "mma_async", "mma_async4"]) == [{"variant": "mma_async4", "tiles": 4, "warps": 1}]
    assert decode_gpu.warm_start(4, ["mma_async4", "mma"]) == [{"tiles": 4, "warps": 1}]  # the session's own variant: no tag
    assert decode_gpu.warm_start(3, ["mma"]) == []


def test_the_default_rows_leave_out_the_kernels_never_fastest_and_rows_picks_any_by_label():
    default = [label for label, _, _ in decode_gpu.chosen_rows(None, with_simt=False)]
    assert default == list(decode_gpu.DEFAULT_ROWS)
    assert {"w4a16 simt", "w4a8 simt"} <= {label for label, _, _ in decode_gpu.chosen_rows(None, with_simt=True)}
    picked = [label for label, _, _ in decode_gpu.chosen_rows(["split", "grouped"], with_simt=False)]
    assert picked == ["w4a16 grouped async4", "w4a16 split async", "w4a16 split async4"]
    assert decode_gpu.chosen_rows(["no such row"], with_simt=False) == []
