"""detect end to end: each recorded root, each trap reproduced, this CPU-only machine, and bad input."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from detect_helpers import ROOTS, one, replay
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import Tag
from hyperloom.tools.detect.api import run_detect
from hyperloom.tools.detect.detect import detect
from hyperloom.tools.detect.models import DetectRequest
from hyperloom.tools.detect.record import record
from hyperloom.tools.detect.root import SystemView


def test_the_h200_capture_reports_gpu_driver_cuda_and_compute_capability():
    result = replay("h200")
    (gpu,) = result.gpus
    assert (gpu.vendor, gpu.name, gpu.target, gpu.compute_capability, gpu.pci_device_id) == ("nvidia", "NVIDIA H200", "sm_90", "9.0",
                                                                                             "0x2335")
    driver = one(result, "driver")
    assert driver.details == {"driver_version": "580.159.04", "cuda_version": "13.0"} and driver.status == "ok"
    assert one(result, "gpu_0").details["sm_clock_max_mhz"] == 1980.0
    assert result.layers["nvidia"] == "ok" and all(result.layers[layer] in ("ok", "unknown") for layer in result.layers)
    assert all(f.fix for f in result.findings if f.status == "unknown"), "every unknown says why and what to do"
    peaks = result.parts[gpu.part or ""]
    assert peaks.evidence.tag is Tag.ASSUMED and "datasheet" in peaks.evidence.source and list(result.parts) == ["NVIDIA H200"]


@pytest.mark.parametrize(
    ("root", "target", "name", "compute_units"),
    [
        ("gfx1201-rx9070xt", "gfx1201", "AMD Radeon RX 9070 XT", None),
        ("gfx1100-rx7900xtx", "gfx1100", "Radeon RX 7900 XTX", 96),
        ("gfx942-mi300x", "gfx942", "AMD Instinct MI300X", 38),
    ],
)
def test_each_amd_capture_names_its_gpu_and_target(root, target, name, compute_units):
    result = replay(root)
    (gpu,) = result.gpus
    assert (gpu.vendor, gpu.target, gpu.name, gpu.compute_units) == ("amd", target, name, compute_units)
    assert gpu.part is not None and result.parts[gpu.part].part.endswith(name.removeprefix("AMD ")), result.parts


def test_a_partition_of_a_larger_part_is_said_so():
    (gpu,) = replay("gfx942-mi300x").gpus
    assert gpu.max_waves_per_cu == 32 and gpu.lds_kib == 64 and gpu.wave_size == 64
    assert (gpu.compute_units, gpu.part, gpu.part_compute_units) == (38, "AMD Instinct MI300X", 304)


def test_a_replayed_root_is_assumed_evidence_and_a_live_look_is_measured(workspace):
    assert all(f.evidence.tag is Tag.ASSUMED and "recorded in" in f.evidence.source for f in replay("h200").findings)
    live = run_detect(DetectRequest(detail=True), workspace)
    assert live.evidence.tag is Tag.MEASURED and all(f.evidence is not None and f.evidence.tag is Tag.MEASURED for f in live.findings)


@pytest.mark.parametrize("root", ["gfx942-mi300x", "h200"])
def test_the_default_answer_gives_passed_checks_one_line_each_and_leaves_per_check_evidence_to_detail(workspace, root):
    shutil.copytree(ROOTS / root, workspace.root / root, symlinks=True)
    full = run_detect(DetectRequest(root=root, detail=True), workspace)
    default = run_detect(DetectRequest(root=root), workspace)
    assert full.passed == [] and all(f.evidence is not None for f in full.findings) and all(g.evidence is not None for g in full.gpus)
    assert [(f.check, f.status) for f in default.findings] == [(f.check, f.status) for f in full.findings if f.status != "ok"]
    assert [(p.layer, p.check, p.summary) for p in default.passed] == [(f.layer, f.check, f.summary) for f in full.findings
                                                                       if f.status == "ok"]
    assert all(f.evidence is None for f in default.findings) and all(g.evidence is None for g in default.gpus)
    assert (default.summary, default.layers, default.evidence.inputs_sha256) == (full.summary, full.layers, full.evidence.inputs_sha256)
    assert [p.model_dump(exclude={"evidence"}) for p in default.parts.values()] == [p.model_dump(exclude={"evidence"})
                                                                                    for p in full.parts.values()]


# ------------------------------------------------------------------ traps, one each


def test_trap_rocr_visible_devices_set_hides_gpus():
    hidden = one(replay("gfx1100-rx7900xtx", {"ROCR_VISIBLE_DEVICES": "1"}), "trap.rocr_visible_devices")
    assert hidden.status == "fail" and "CPU" in hidden.summary and "HIP_VISIBLE_DEVICES" in hidden.fix
    assert one(replay("gfx1100-rx7900xtx", {"ROCR_VISIBLE_DEVICES": "0"}), "trap.rocr_visible_devices").status == "warn"
    assert one(replay("gfx1100-rx7900xtx"), "trap.rocr_visible_devices").status == "ok"


def test_trap_hip_visible_devices_on_the_display_gpu():
    found = one(replay("gfx1100-rx7900xtx", {"HIP_VISIBLE_DEVICES": "0"}), "trap.visible_devices_display")
    assert found.status == "warn" and "DP-1" in found.summary and found.details["amd_display_gpus"] == "0"
    assert one(replay("gfx1100-rx7900xtx", {"HIP_VISIBLE_DEVICES": "1"}), "trap.visible_devices_display").status == "ok"


def test_trap_hsa_override_gfx_version_masks_the_real_target():
    masked = one(replay("gfx1100-rx7900xtx", {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}), "trap.hsa_override_gfx_version")
    assert masked.status == "fail" and masked.details["forced_target"] == "gfx1030" and masked.details["real_targets"] == "gfx1100"
    same = one(replay("gfx1100-rx7900xtx", {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}), "trap.hsa_override_gfx_version")
    assert same.status == "warn"


def test_trap_performance_level_that_gates_clocks():
    found = one(replay("vega10-perf-manual"), "trap.perf_level")
    assert found.status == "warn" and found.details == {"gpu0_perf_level": "manual", "gpu1_perf_level": "manual"}
    assert one(replay("gfx942-mi300x"), "trap.perf_level").status == "ok"


def test_trap_user_not_in_the_render_and_video_groups():
    found = one(replay("gfx1201-rx9070xt"), "trap.render_video_groups")
    assert found.status == "fail" and found.layer == "driver" and "usermod -aG render,video ana" in found.fix


def test_trap_compiler_too_old_for_the_detected_target():
    found = one(replay("gfx1201-rx9070xt"), "trap.compiler_too_old")
    assert found.status == "fail" and found.details == {"target": "gfx1201", "llvm_mc_version": "16.0.6"}


def test_trap_other_processes_holding_vram():
    found = one(replay("vega10-perf-manual"), "trap.vram_holders")
    assert found.status == "warn" and "teamredminer" in found.summary and found.details["pids"] == "1319"
    assert one(replay("gfx942-mi300x"), "trap.vram_holders").status == "warn"
    assert one(replay("h200"), "trap.vram_holders").status == "ok"


def test_the_lowest_fault_is_named_in_the_summary():
    result = replay("gfx1201-rx9070xt")
    assert result.layers["driver"] == "fail" and "Lowest fail: driver / trap.render_video_groups" in result.summary


# ------------------------------------------------------------------ this machine and bad input


def test_this_cpu_only_machine_reports_no_gpu_without_error(workspace):
    result = run_detect(DetectRequest(), workspace)
    assert result.gpus == [] and result.summary.startswith("no GPU found")
    assert not any(f.status == "fail" for f in result.findings)
    assert one(result, "kfd_topology").status == "unknown"


def _fake_tool(folder: Path, name: str, version_line: str) -> None:
    script = folder / name
    script.write_text(f'#!/bin/sh\ncase "$1" in --version|--help) echo "{version_line}"; exit 0;; esac\nexec sleep 30\n')
    script.chmod(0o755)


def test_a_hanging_vendor_tool_is_unknown_after_the_timeout(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "nvidia-smi", "NVIDIA-SMI version : 580.1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = one(detect(SystemView(None, timeout_s=0.5)), "nvidia_smi")
    assert found.status == "unknown" and "did not answer within 0.5 s" in found.summary and "hang" in found.fix


def test_a_missing_vendor_tool_says_what_to_install():
    found = one(replay("gfx1100-rx7900xtx"), "trap.compiler_too_old")
    assert found.status == "unknown" and "not installed" in found.summary and "llvm" in found.fix
    assert "install ROCm" in one(replay("gfx1100-rx7900xtx"), "hip").fix


@pytest.mark.parametrize("damage", ["a folder", "binary bytes", "no keys"])
def test_unreadable_kfd_properties_are_unknown_not_a_crash(tmp_path, damage):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "gfx1100-rx7900xtx", root)
    properties = root / "sys/class/kfd/kfd/topology/nodes/1/properties"
    properties.unlink()
    if damage == "a folder":
        properties.mkdir()
    else:
        properties.write_bytes(b"\xff\xfe\x00garbage" if damage == "binary bytes" else b"hello world\n")
    result = replay(root)
    node = one(result, "kfd_node_1")
    assert node.status == "unknown" and "dmesg" in node.fix
    assert result.gpus[0].target == "gfx1100"  # rocminfo still names the GPU


def test_a_root_outside_the_workspace_is_refused(workspace):
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_detect(DetectRequest(root=str(ROOTS / "h200")), workspace)


def test_a_root_inside_the_workspace_replays(workspace):
    shutil.copytree(ROOTS / "h200", workspace.root / "h200")
    assert run_detect(DetectRequest(root="h200"), workspace).gpus[0].name == "NVIDIA H200"


def test_recording_this_machine_replays_to_the_same_findings(tmp_path, monkeypatch):
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "3")
    record(tmp_path / "rec")
    assert (tmp_path / "rec/proc/self/environ").read_text() == "HIP_VISIBLE_DEVICES=3\0"
    live = detect(SystemView(None))
    again = replay(tmp_path / "rec")
    assert [(f.check, f.status) for f in again.findings] == [(f.check, f.status) for f in live.findings]
    assert "environment HIP_VISIBLE_DEVICES" in one(again, "trap.visible_devices_display").source


def _root_with_commands(folder: Path, outputs: dict[str, str]) -> Path:
    (folder / "commands").mkdir(parents=True)
    for command, text in outputs.items():
        (folder / "commands" / f"{command}.txt").write_text(text)
    return folder


@pytest.mark.skipif(shutil.which("clang-19") is None or shutil.which("llvm-mc-19") is None,
                    reason="LLVM 19 is not installed; .ci/run installs it")
def test_a_missing_hipcc_beside_a_working_clang_leaves_the_compiler_layer_ok(tmp_path):
    # this machine's own clang and llvm-mc answers, recorded as a root without hipcc and without a GPU
    outputs = {f"{tool} --version": subprocess.run([f"{tool}-19", "--version"], capture_output=True, text=True, timeout=30,
                                                   check=True).stdout
               for tool in ("clang", "llvm-mc")}
    result = replay(_root_with_commands(tmp_path / "clang", outputs))
    hipcc = one(result, "hipcc")
    assert hipcc.status == "ok" and "not needed" in hipcc.summary and result.layers["compiler"] == "ok"
    assert one(result, "trap.compiler_too_old").status == "ok"
    without_clang = replay(_root_with_commands(tmp_path / "bare", {"llvm-mc --version": outputs["llvm-mc --version"]}))
    assert one(without_clang, "hipcc").status == "unknown" and without_clang.layers["compiler"] == "unknown"
