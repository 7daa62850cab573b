"""NVIDIA: nvidia-smi's driver and CUDA versions, each GPU's compute capability, clocks, memory and processes."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.root import Output, SystemView, install_hint
from hyperloom.tools.smi.nvidia import APPS_ARGS, QUERY_ARGS, NvidiaGpu, parse_apps, parse_header, parse_query
from hyperloom.tools.smi.readings import GpuProcess

GROUND_TRUTH = "nvidia-smi (driver, CUDA version, per-GPU queries)"


@dataclass
class Nvidia:
    """The NVIDIA layer as nvidia-smi reports it: versions, GPUs, processes, the outputs read and the findings."""

    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[NvidiaGpu] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    query: Output | None = None
    apps: Output | None = None
    findings: list[Finding] = field(default_factory=list)


def detect_nvidia(system: SystemView, nvidia_on_pci: bool) -> Nvidia:
    result = Nvidia()
    add = result.findings.append
    banner = system.run("nvidia-smi")
    if not banner.ok:
        if nvidia_on_pci or not banner.missing:
            add(finding.make(
                system, "nvidia", "nvidia_smi", "unknown", f"NVIDIA driver not read: {banner.why_not(system.timeout_s)}",
                sources=[banner], ground_truth=GROUND_TRUTH,
                fix=install_hint("nvidia-smi") if banner.missing
                    else "run nvidia-smi by hand; a hang means a wedged GPU or driver (check dmesg, nvidia-bug-report.sh)",
            ))
        else:
            add(finding.make(
                system, "nvidia", "nvidia_smi", "unknown", "no NVIDIA GPU on the PCI bus and no nvidia-smi: NVIDIA layer not checked",
                sources=[banner], ground_truth=GROUND_TRUTH,
                fix="nothing to do unless this machine has an NVIDIA GPU; then install its driver",
            ))
        return result
    result.driver_version, result.cuda_version = parse_header(banner.text or "")
    query = system.run("nvidia-smi", *QUERY_ARGS)
    result.query = query
    result.gpus = parse_query(query.text or "")
    add(finding.make(
        system, "nvidia", "driver", "ok" if result.driver_version else "unknown",
        f"NVIDIA driver {result.driver_version or '?'}, CUDA {result.cuda_version or '?'} (the newest CUDA this driver runs)",
        sources=[banner], ground_truth=GROUND_TRUTH,
        details={"driver_version": result.driver_version, "cuda_version": result.cuda_version},
        fix=None if result.driver_version else "run nvidia-smi by hand: its banner carries the driver and CUDA versions",
    ))
    if not result.gpus:
        add(finding.make(
            system, "nvidia", "gpus", "fail" if query.ok else "unknown",
            "nvidia-smi lists no GPU" if query.ok else f"per-GPU query failed: {query.why_not(system.timeout_s)}",
            sources=[query], ground_truth=GROUND_TRUTH,
            fix="check CUDA_VISIBLE_DEVICES, dmesg (Xid errors) and that the driver matches the kernel",
        ))
        return result
    for gpu in result.gpus:
        add(finding.make(
            system, "nvidia", f"gpu_{gpu.index}", "ok",
            f"GPU {gpu.index} {gpu.get('name')}: compute capability {gpu.get('compute_cap')}, SM {gpu.get('clocks.sm')}/"
            f"{gpu.get('clocks.max.sm')} MHz, memory clock {gpu.get('clocks.mem')}/{gpu.get('clocks.max.mem')} MHz, "
            f"{gpu.get('memory.used')}/{gpu.get('memory.total')} MiB in use",
            sources=[query], ground_truth=GROUND_TRUTH, target=gpu.sm or "unspecified",
            details={
                "compute_capability": gpu.get("compute_cap"), "sm_clock_mhz": gpu.number("clocks.sm"),
                "sm_clock_max_mhz": gpu.number("clocks.max.sm"), "memory_clock_mhz": gpu.number("clocks.mem"),
                "memory_used_mib": gpu.number("memory.used"), "memory_total_mib": gpu.number("memory.total"),
                "power_limit_w": gpu.number("power.limit"), "display_active": gpu.get("display_active"),
            },
        ))
    apps = system.run("nvidia-smi", *APPS_ARGS)
    result.apps = apps
    result.processes = parse_apps(apps.text or "", result.gpus)
    return result
