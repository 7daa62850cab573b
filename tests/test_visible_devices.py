"""Device numbers within CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (tools/runtime/visible.py): a worker pinned to
device N runs on the N-th GPU this process may use, never on a GPU the variable leaves out; idle GPUs found by
nvidia-smi (which ignores the variable) are mapped to those numbers."""

from __future__ import annotations

import os
import stat

import pytest

from helpers import FIXTURES
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.runtime import launcher
from hyperloom.tools.runtime.models import TrialRequest
from hyperloom.tools.runtime.visible import ordinals, pinned_environ, visible_entries
from hyperloom.tools.smi.nvidia import parse_idle_query
from hyperloom.tools.smi.readings import SmiGpu
from hyperloom.tools.tune.devices import IDLE_MEMORY_MIB, IDLE_UTILIZATION_PCT, idle_gpus, worker_slots

IDLE_QUERY = FIXTURES / "detect-parsers" / "nvidia-smi-idle-query-h200.txt"


@pytest.mark.parametrize(("value", "entries"), [
    (None, None), ("2,3", ["2", "3"]), ("", []), ("0,-1,1", ["0"]), (" GPU-8932f937 , 1", ["GPU-8932f937", "1"]), ("1,,2", ["1"]),
])
def test_the_variable_lists_gpus_up_to_its_first_empty_or_negative_entry(value, entries):
    environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    assert visible_entries("cuda", environ) == entries


def test_a_pinned_worker_gets_the_gpu_the_callers_variable_lists_at_that_position():
    assert pinned_environ({}, "cuda", 1)["CUDA_VISIBLE_DEVICES"] == "1"
    env = pinned_environ({"CUDA_VISIBLE_DEVICES": "2,3"}, "cuda", 1)
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # the order nvidia-smi numbers in
    # the caller's choice stays
    assert pinned_environ({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, "cuda", 0)["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"
    hip = pinned_environ({"HIP_VISIBLE_DEVICES": "GPU-aa,GPU-bb", "ROCR_VISIBLE_DEVICES": "1,2"}, "hip", 1)
    assert hip["HIP_VISIBLE_DEVICES"] == "GPU-bb" and hip["ROCR_VISIBLE_DEVICES"] == "1,2" and "CUDA_DEVICE_ORDER" not in hip
    assert pinned_environ({"CUDA_VISIBLE_DEVICES": "5"}, "c", None) == {"CUDA_VISIBLE_DEVICES": "5"}  # a CPU worker: nothing pinned


@pytest.mark.parametrize(("value", "device", "message", "next_step"), [
    ("2,3", 2, "device 2 is not a GPU this process may use: CUDA_VISIBLE_DEVICES='2,3' lets it use 2 (2, 3)", "pass a device from 0 to 1"),
    ("", 0, "CUDA_VISIBLE_DEVICES='' lets it use none", "unset CUDA_VISIBLE_DEVICES"),
    (None, -1, "device -1 is not a GPU number", "pass 0 or more"),
])
def test_a_device_the_process_may_not_use_is_refused_with_the_variable_named(value, device, message, next_step):
    environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    with pytest.raises(HyperloomError) as caught:
        pinned_environ(environ, "cuda", device)
    assert message in caught.value.cause and next_step in caught.value.next_step


def test_trials_and_tune_slots_follow_the_variable(monkeypatch):
    seen = {}
    monkeypatch.setattr(launcher, "run_worker", lambda entry, payload, timeout_s, env: seen.update(env=env, payload=payload) or _ok())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    launcher.run_trial(TrialRequest(backend="cuda", code_object="k.cubin", entry="k", args=[], mode="correctness"), timeout_s=5, device=1)
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "5" and seen["payload"]["device_index"] == 0  # the worker's one GPU
    assert worker_slots("cuda", 1, [1, 0, 1]) == [1, 0]
    with pytest.raises(HyperloomError, match="device 2 is not a GPU this process may use: CUDA_VISIBLE_DEVICES='4,5'"):
        worker_slots("cuda", 1, [0, 2])


def test_idle_gpus_as_nvidia_smi_numbers_them_are_mapped_to_the_numbers_this_process_uses():
    idle = [SmiGpu(0, "GPU-0000aaaa-1111"), SmiGpu(2, "GPU-2222bbbb-3333"), SmiGpu(3, "GPU-3333cccc-4444")]
    assert ordinals("cuda", idle, {}) == [0, 2, 3]
    assert ordinals("cuda", idle, {"CUDA_VISIBLE_DEVICES": "3,1,GPU-2222bbbb"}) == [0, 2]  # 1 is busy; a UUID prefix names GPU 2
    assert ordinals("cuda", idle, {"CUDA_VISIBLE_DEVICES": "1"}) == []
    assert ordinals("hip", [SmiGpu(1)], {"HIP_VISIBLE_DEVICES": "1"}) == [0]


def test_nvidia_smis_idle_query_is_read_from_its_real_output(tmp_path, monkeypatch):
    """The fixture is nvidia-smi's answer on a lent H200 (idle). A stand-in nvidia-smi prints it, and the
    last GPU, seen from a process limited to it by its UUID's prefix in CUDA_VISIBLE_DEVICES, is that process's device 0."""
    text = IDLE_QUERY.read_text()
    gpus = parse_idle_query(text, IDLE_UTILIZATION_PCT, IDLE_MEMORY_MIB)
    assert [g.index for g in gpus] == list(range(len(text.strip().splitlines()))) and all(g.uuid.startswith("GPU-") for g in gpus)
    busy = text.replace(", 0, 0", ", 100, 80000", 1)  # the first GPU at full use, 80 GB in use
    assert busy != text and 0 not in [g.index for g in parse_idle_query(busy, IDLE_UTILIZATION_PCT, IDLE_MEMORY_MIB)]
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ncat '{IDLE_QUERY}'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    assert idle_gpus("cuda", {}) == [g.index for g in gpus]
    last = gpus[-1]
    assert idle_gpus("cuda", {"CUDA_VISIBLE_DEVICES": last.uuid[:12]}) == [0]
    assert idle_gpus("hip", {"ROCR_VISIBLE_DEVICES": "0"}) == []  # amd-smi's numbers cannot be mapped through ROCr's


def _ok():
    from hyperloom.core.worker import WorkerOutcome

    return WorkerOutcome("OK", result={"status": "OK"})
