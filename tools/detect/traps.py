"""Known traps, each a named finding: settings that hide GPUs, mask the target, gate clocks or share the GPU."""

from __future__ import annotations

import re

from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.nvidia import Nvidia
from hyperloom.tools.detect.root import FileRead, Output, SystemView
from hyperloom.tools.detect.runtime import Runtime
from hyperloom.tools.detect.silicon import KfdGpu
from hyperloom.tools.detect.spans import by_value

ENV_TRUTH = "the process environment (/proc/self/environ)"
DRM = "/sys/class/drm"
# amdgpu power_dpm_force_performance_level values that hold clocks below what a benchmark should see.
GATING_LEVELS = {"low", "manual", "profile_standard", "profile_min_sclk", "profile_min_mclk"}
_OVERRIDE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def _env_read(system: SystemView, name: str) -> FileRead:
    value = system.environ().get(name)
    return FileRead(f"environment {name}", f"{name}={value}" if value is not None else f"{name} unset")


def override_target(value: str) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION 'major.minor.stepping' as a gfx name (minor and stepping in hex): 10.3.0 → gfx1030."""
    match = _OVERRIDE.match(value.strip())
    if not match:
        return None
    major, minor, stepping = (int(g) for g in match.groups())
    return f"gfx{major}{minor:x}{stepping:x}"


def rocr_visible_devices(system: SystemView, amd_gpus: int) -> Finding:
    read = _env_read(system, "ROCR_VISIBLE_DEVICES")
    value = system.environ().get("ROCR_VISIBLE_DEVICES")
    check = "trap.rocr_visible_devices"
    if value is None:
        return finding.make(system, "runtime", check, "ok", "ROCR_VISIBLE_DEVICES is unset", sources=[read], ground_truth=ENV_TRUTH)
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    hides_all = not chosen or all(v.isdigit() and int(v) >= amd_gpus for v in chosen)
    return finding.make(
        system, "runtime", check, "fail" if hides_all and amd_gpus else "warn",
        f"ROCR_VISIBLE_DEVICES={value!r} " + (
            "leaves no GPU visible: frameworks fall back to the CPU without saying so" if hides_all and amd_gpus
            else "hides GPUs below HIP, and renumbers the rest"
        ),
        sources=[read], ground_truth=ENV_TRUTH, details={"value": value, "amd_gpus": amd_gpus},
        fix="unset ROCR_VISIBLE_DEVICES; pin a process to one GPU with HIP_VISIBLE_DEVICES instead",
    )


def hsa_override(system: SystemView, kfd: list[KfdGpu]) -> Finding:
    read = _env_read(system, "HSA_OVERRIDE_GFX_VERSION")
    value = system.environ().get("HSA_OVERRIDE_GFX_VERSION")
    check = "trap.hsa_override_gfx_version"
    if value is None:
        return finding.make(system, "runtime", check, "ok", "HSA_OVERRIDE_GFX_VERSION is unset", sources=[read], ground_truth=ENV_TRUTH)
    forced = override_target(value)
    real = sorted({g.target for g in kfd})
    masked = [t for t in real if t != forced]
    status = "fail" if masked else "warn"
    summary = (
        f"HSA_OVERRIDE_GFX_VERSION={value} makes ROCr report {forced or 'an unparsable target'} "
        + (f"for a real {', '.join(masked)}: code built for the override runs on different silicon" if masked
           else "(the real target is unknown or the same): remove it so a mismatch cannot hide")
    )
    return finding.make(
        system, "runtime", check, status, summary, sources=[read, *(g.sources[0] for g in kfd)], ground_truth=ENV_TRUTH,
        details={"value": value, "forced_target": forced, "real_targets": ",".join(real)},
        fix=f"unset HSA_OVERRIDE_GFX_VERSION and build for {', '.join(real) or 'the real target'} (--offload-arch)",
    )


def display_gpus(system: SystemView, kfd: list[KfdGpu]) -> tuple[dict[int, str], list[FileRead]]:
    """HIP indices of AMD GPUs with a connected display (connector status under /sys/class/drm)."""
    reads: list[FileRead] = []
    by_bus = {g.bus_id: index for index, g in enumerate(kfd) if g.bus_id}
    found: dict[int, str] = {}
    for entry in system.listdir(DRM):
        card, _, connector = entry.partition("-")
        if not connector or not card.startswith("card"):
            continue
        status = system.read(f"{DRM}/{entry}/status")
        if (status.text or "").strip() != "connected":
            continue
        uevent = system.read(f"{DRM}/{card}/device/uevent")
        reads += [status, uevent]
        slot = re.search(r"PCI_SLOT_NAME=(\S+)", uevent.text or "")
        if slot and slot.group(1).lower() in by_bus:
            found[by_bus[slot.group(1).lower()]] = connector
    return found, reads


def visible_display(system: SystemView, kfd: list[KfdGpu], nvidia: Nvidia) -> Finding:
    """Trap: HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES) selects the GPU that drives a display."""
    check = "trap.visible_devices_display"
    amd_display, reads = display_gpus(system, kfd)
    nv_display = {g.index: "display" for g in nvidia.gpus if (g.get("display_active") or "").lower() == "enabled"}
    problems, sources = [], [*reads]
    for variable, displays in (("HIP_VISIBLE_DEVICES", amd_display), ("CUDA_VISIBLE_DEVICES", nv_display)):
        value = system.environ().get(variable)
        sources.append(_env_read(system, variable))
        chosen = [int(v) for v in (value or "").split(",") if v.strip().isdigit()]
        hit = [i for i in chosen if i in displays]
        if hit:
            problems.append(f"{variable}={value} selects GPU {', '.join(map(str, hit))}, which drives a display "
                            f"({', '.join(displays[i] for i in hit)})")
    details = {"amd_display_gpus": ",".join(map(str, sorted(amd_display))), "nvidia_display_gpus": ",".join(map(str, sorted(nv_display)))}
    if problems:
        return finding.make(
            system, "runtime", check, "warn",
            "; ".join(problems) + ": the compositor shares its clocks and memory, and a hang freezes the screen",
            sources=sources, ground_truth=f"{DRM}/card*-*/status, nvidia-smi display_active", details=details,
            fix="point HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES at a GPU with no display attached",
        )
    return finding.make(
        system, "runtime", check, "ok",
        "no selected GPU drives a display"
        + (f" (GPU {details['amd_display_gpus'] or details['nvidia_display_gpus']} does)" if amd_display or nv_display else ""),
        sources=sources, ground_truth=f"{DRM}/card*-*/status, nvidia-smi display_active", details=details,
    )


def perf_level(system: SystemView, runtime: Runtime) -> Finding | None:
    """Trap: a performance level that holds clocks (and so counters and timings) below normal before a benchmark."""
    smi, output = runtime.smi, runtime.smi_output
    if smi is None or output is None:
        return None
    levels = {g.index: g.perf_level for g in smi.gpus.values() if g.perf_level}
    check = "trap.perf_level"
    if not levels:
        return finding.make(
            system, "runtime", check, "unknown", f"{smi.tool} did not report a performance level",
            sources=[output], ground_truth="rocm-smi --showperflevel (sysfs power_dpm_force_performance_level)",
            fix="read /sys/class/drm/card*/device/power_dpm_force_performance_level",
        )
    gated = {i: lvl for i, lvl in levels.items() if lvl.lower() in GATING_LEVELS}
    shown = by_value(levels, "GPU")
    return finding.make(
        system, "runtime", check, "warn" if gated else "ok",
        f"performance level {shown}" + (": clocks are held by hand or low, so timings and counters will not show the part's peak" if gated
                                        else ""),
        sources=[output], ground_truth="rocm-smi --showperflevel (sysfs power_dpm_force_performance_level)",
        details={f"gpu{i}_perf_level": lvl for i, lvl in levels.items()},
        fix="rocm-smi --setperfdeterminism off / amd-smi reset, or echo auto > "
            "/sys/class/drm/cardN/device/power_dpm_force_performance_level",
    )


def vram_holders(system: SystemView, runtime: Runtime, nvidia: Nvidia) -> list[Finding]:
    """Trap: other processes holding GPU memory on a GPU about to be benchmarked."""
    found: list[Finding] = []
    pairs: list[tuple[str, list, Output | None]] = [
        ("AMD", runtime.smi.processes if runtime.smi else [], runtime.smi_output if runtime.smi and runtime.smi.processes_listed else None),
        ("NVIDIA", nvidia.processes, nvidia.apps),
    ]
    for vendor, processes, output in pairs:
        if output is None or not output.ok:
            continue
        named = ", ".join(p.describe() for p in processes)
        found.append(finding.make(
            system, "nvidia" if vendor == "NVIDIA" else "runtime", "trap.vram_holders", "warn" if processes else "ok",
            (f"{len(processes)} other {vendor} GPU process(es): {named}: they take memory and time from a benchmark"
             if processes else f"no other {vendor} GPU process"),
            sources=[output], ground_truth=f"{output.command.split()[0]} (process list)",
            details={"processes": len(processes), "pids": ",".join(str(p.pid) for p in processes)},
            fix="stop them (or pick an idle GPU) before benchmarking; rerun detect to confirm",
        ))
    return found
