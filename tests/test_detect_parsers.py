"""detect's parsers on captured real outputs (tests/fixtures/detect*/README.md says where each comes from)."""

from __future__ import annotations

import pytest

from detect_helpers import PARSERS, ROOTS, command_file
from hyperloom.tools.detect.compiler import rejects_target
from hyperloom.tools.detect.driver import parse_id, parse_ls
from hyperloom.tools.detect.rocminfo import parse_rocminfo
from hyperloom.tools.detect.root import recorded_name
from hyperloom.tools.detect.silicon import bus_id, gfx_name, parse_properties
from hyperloom.tools.detect.traps import override_target
from hyperloom.tools.smi.amd import parse_amd_smi, parse_rocm_smi
from hyperloom.tools.smi.nvidia import QUERY_ARGS, parse_header, parse_query


@pytest.mark.parametrize(
    ("version", "target"),
    [(120001, "gfx1201"), (110000, "gfx1100"), (90402, "gfx942"), (90010, "gfx90a"), (100300, "gfx1030"),
     (110501, "gfx1151"), (90008, "gfx908"), (0, None)],
)
def test_gfx_target_version_decodes_with_hex_minor_and_stepping(version, target):
    assert gfx_name(version) == target


@pytest.mark.parametrize(("value", "target"),
                         [("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("9.4.2", "gfx942"), ("9.0.10", "gfx90a"), ("gfx1100", None)])
def test_hsa_override_values_read_as_the_target_they_force(value, target):
    assert override_target(value) == target


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("gfx1100-rx7900xtx/sys/class/kfd/kfd/topology/nodes/1/properties",
         {"gfx_target_version": 110000, "simd_count": 192, "simd_per_cu": 2, "device_id": 0x744C, "lds_size_in_kb": 64,
          "wave_front_size": 32}),
        ("gfx942-mi300x/sys/class/kfd/kfd/topology/nodes/2/properties",
         {"gfx_target_version": 90402, "simd_count": 152, "simd_per_cu": 4, "device_id": 0x74A1, "num_xcc": 1, "max_waves_per_simd": 8}),
        ("gfx942-mi300x/sys/class/kfd/kfd/topology/nodes/1/properties", {"gfx_target_version": 0, "cpu_cores_count": 96, "simd_count": 0}),
    ],
)
def test_kfd_properties_parse_to_integers(path, expected):
    values = parse_properties((ROOTS / path).read_text())
    assert {k: values[k] for k in expected} == expected


def test_kfd_location_id_packs_the_pci_address():
    assert bus_id(0, 34304) == "0000:86:00.0" and bus_id(0, 1280) == "0000:05:00.0" and bus_id(1, 0x7500) == "0001:75:00.0"


@pytest.mark.parametrize(
    ("root", "gpus"),
    [
        ("gfx1201-rx9070xt", [("gfx1201", "AMD Radeon RX 9070 XT", 0x7550, None)]),
        ("gfx1100-rx7900xtx", [("gfx1100", "Radeon RX 7900 XTX", None, None)]),
        ("gfx942-mi300x", [("gfx942", "AMD Instinct MI300X", 0x74A1, 304)]),
    ],
)
def test_rocminfo_lists_gpu_agents_and_skips_cpus(root, gpus):
    agents, _ = parse_rocminfo(command_file(root, "rocminfo").read_text())
    assert [(a.name, a.marketing_name, a.chip_id, a.compute_units) for a in agents if a.is_gpu] == gpus


def test_rocminfo_reports_the_cpu_agent_and_module_line():
    agents, module = parse_rocminfo(command_file("gfx942-mi300x", "rocminfo").read_text())
    assert [a.device_type for a in agents] == ["CPU", "GPU"] and agents[1].wavefront_size == 64 and agents[1].max_waves_per_cu == 32
    assert module is None  # "ROCk module is loaded" without a version, as this ROCm printed it


@pytest.mark.parametrize(
    ("text_file", "levels", "caps", "processes", "driver"),
    [
        (command_file("gfx942-mi300x", "rocm-smi -a"), {0: "auto", 1: "auto"}, {0: 750.0, 1: 750.0}, [(1188185, "UNKNOWN", (), None)],
         "6.7.0"),
        (command_file("vega10-perf-manual", "rocm-smi -a"), {0: "manual", 1: "manual"}, {0: 264.0, 1: 264.0},
         [(1319, "teamredminer", (0, 1), 14147411968)], "5.11.32.21.40"),
    ],
)
def test_rocm_smi_all_gives_levels_caps_processes_and_driver(text_file, levels, caps, processes, driver):
    report = parse_rocm_smi(text_file.read_text())
    assert {i: g.perf_level for i, g in report.gpus.items()} == levels
    assert {i: g.power_cap_w for i, g in report.gpus.items()} == caps
    assert [(p.pid, p.name, p.gpus, p.vram_bytes) for p in report.processes] == processes
    assert report.driver_version == driver and report.processes_listed


def test_rocm_smi_showpids_table_reads_vram_per_process():
    report = parse_rocm_smi((PARSERS / "rocm-smi-showpids.txt").read_text())
    assert [(p.pid, p.name, p.vram_bytes) for p in report.processes] == [(3722222, "test_ref", 0),
                                                                         (1168514, "pt_main_thread", 177386942464)]


def test_amd_smi_default_view_gives_each_gpu_and_the_versions():
    report = parse_amd_smi((PARSERS / "amd-smi-r9700.txt").read_text())
    assert (report.driver_version, report.rocm_version) == ("6.14.0-37", "7.1.1")
    assert [(g.index, g.bus_id, g.vram_used_mb, g.vram_total_mb, g.power_cap_w) for g in report.gpus.values()] == [
        (0, "0000:03:00.0", 519, 30576, 300.0), (1, "0000:23:00.0", 519, 30576, 300.0), (2, "0000:c3:00.0", 519, 30576, 300.0)]
    assert report.gpus[0].name == "...Radeon AI PRO R9700"


def test_nvidia_smi_banner_and_query_from_the_h200():
    assert parse_header(command_file("h200", "nvidia-smi").read_text()) == ("580.159.04", "13.0")
    (gpu,) = parse_query(command_file("h200", " ".join(("nvidia-smi", *QUERY_ARGS))).read_text())
    assert (gpu.index, gpu.get("name"), gpu.sm, gpu.number("clocks.max.sm"), gpu.number("memory.total")) == (0, "NVIDIA H200", "sm_90",
                                                                                                             1980.0, 143771.0)
    assert gpu.get("display_active") == "Disabled"


def test_ls_and_id_give_device_groups_and_the_users_groups():
    nodes = parse_ls(command_file("gfx1201-rx9070xt", "ls -l /dev/kfd /dev/dri").read_text())
    assert [(n.path, n.group) for n in nodes] == [("/dev/kfd", "render"), ("/dev/dri/card0", "video"), ("/dev/dri/renderD128", "render")]
    user, groups = parse_id(command_file("gfx1201-rx9070xt", "id").read_text())
    assert user == "ana" and "render" not in groups and {"sudo", "adm"} <= groups
    assert nodes[0].allows("ana", groups | {"render"}) and not nodes[0].allows("ana", groups) and nodes[0].allows("root", set())


@pytest.mark.parametrize(
    ("text", "target", "rejected"),
    [
        (command_file("gfx1201-rx9070xt", "llvm-mc --triple=amdgcn-amd-amdhsa -mcpu=gfx1201").read_text(), "gfx1201", True),
        ('\t.text\n\t.amdgcn_target "amdgcn-amd-amdhsa--gfx1201"\n', "gfx1201", False),
    ],
)
def test_llvm_mc_rejection_is_read_from_its_output_not_its_exit_code(text, target, rejected):
    assert rejects_target(text, target) is rejected


def test_recorded_command_names_escape_slashes():
    assert recorded_name("ls -l /dev/kfd") == "ls -l %2Fdev%2Fkfd.txt" and recorded_name("a 100%") == "a 100%25.txt"
