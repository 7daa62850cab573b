"""detect: walk the GPU stack bottom-up and report each layer's findings, naming the layer a fault lives in."""

from __future__ import annotations

from hyperloom.core.evidence import assumed, measured
from hyperloom.core.hashing import combine_digests
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.detect import parts, traps
from hyperloom.tools.detect.compiler import detect_compiler
from hyperloom.tools.detect.driver import detect_driver
from hyperloom.tools.detect.finding import evidence_for
from hyperloom.tools.detect.models import LAYERS, SEVERITY, DetectResult, Finding, Gpu, Peaks, Status
from hyperloom.tools.detect.nvidia import Nvidia, detect_nvidia
from hyperloom.tools.detect.root import ROOT_ENV, SystemView
from hyperloom.tools.detect.runtime import Runtime, detect_runtime
from hyperloom.tools.detect.silicon import AMD_VENDOR, NVIDIA_VENDOR, Silicon, detect_silicon
from hyperloom.tools.detect.spans import counted

STEPS = 6


def detect(system: SystemView, progress: ProgressFn | None = None) -> DetectResult:
    """Every layer in order; a layer that cannot be read is unknown, never an exception."""
    step = _stepper(progress)
    silicon = detect_silicon(system)
    step()
    amd_expected = bool(silicon.kfd) or any(p.vendor == AMD_VENDOR for p in silicon.pci)
    runtime = detect_runtime(system, amd_expected)
    step()
    driver = detect_driver(system, amd_expected or bool(runtime.gpu_agents), any(p.vendor == AMD_VENDOR for p in silicon.pci))
    step()
    targets = sorted({g.target for g in silicon.kfd} or {a.name for a in runtime.gpu_agents if a.name.startswith("gfx")})
    compiler = detect_compiler(system, targets)
    step()
    nvidia = detect_nvidia(system, any(p.vendor == NVIDIA_VENDOR for p in silicon.pci))
    step()
    trap_findings = _traps(system, silicon, runtime, nvidia, len(silicon.kfd) or len(runtime.gpu_agents))
    findings = [*silicon.findings, *driver.findings, *runtime.findings, *compiler.findings, *nvidia.findings, *trap_findings]
    findings.sort(key=lambda f: LAYERS.index(f.layer))
    gpus, found = _gpus(system, silicon, runtime, nvidia)
    step()
    layers = {layer: _worst([f.status for f in findings if f.layer == layer]) for layer in LAYERS}
    digest = combine_digests([f.evidence.inputs_sha256 for f in findings if f.evidence is not None])
    evidence = (
        assumed(f"replay of the recorded root {system.root} by hyperloom.detect", inputs_sha256=digest)
        if system.replayed
        else measured("detect", inputs_sha256=digest, target=",".join(g.target or "?" for g in gpus) or "host")
    )
    return DetectResult(
        summary=_summary(gpus, findings),
        gpus=gpus,
        parts=found,
        layers=layers,
        findings=findings,
        root=str(system.root) if system.root is not None else None,
        evidence=evidence,
    )


def _stepper(progress: ProgressFn | None):
    done = [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], STEPS)

    return step


def _traps(system: SystemView, silicon: Silicon, runtime: Runtime, nvidia: Nvidia, amd_gpus: int) -> list[Finding]:
    found = [
        traps.rocr_visible_devices(system, amd_gpus),
        traps.hsa_override(system, silicon.kfd),
        traps.visible_display(system, silicon.kfd, nvidia),
    ]
    if (level := traps.perf_level(system, runtime)) is not None:
        found.append(level)
    return found + traps.vram_holders(system, runtime, nvidia)


def _worst(statuses: list[Status]) -> Status:
    return max(statuses, key=lambda s: SEVERITY[s]) if statuses else "unknown"


def _summary(gpus: list[Gpu], findings: list[Finding]) -> str:
    found = counted(f"{g.name} ({g.target or '?'})" for g in gpus) or "no GPU found"
    for status in ("fail", "warn"):
        first = next((f for f in findings if f.status == status), None)
        if first is not None:
            return f"{found}. Lowest {status}: {first.layer} / {first.check}: {first.summary}"
    return f"{found}. No layer failed; unknown layers say what to install."


def _named(part: parts.Part | None, found: dict[str, Peaks]) -> str | None:
    """The part's name, its datasheet peaks noted once in `found`."""
    if part is None:
        return None
    found.setdefault(part.name, part.peaks())
    return part.name


def _gpus(system: SystemView, silicon: Silicon, runtime: Runtime, nvidia: Nvidia) -> tuple[list[Gpu], dict[str, Peaks]]:
    """Every GPU the lowest layer that saw it reports, and the datasheet peaks of the parts among them."""
    found: dict[str, Peaks] = {}
    agents = runtime.gpu_agents
    gpus: list[Gpu] = []
    for index, node in enumerate(silicon.kfd):
        agent = agents[index] if index < len(agents) and agents[index].name == node.target else None
        name = (agent.marketing_name if agent else None)
        device_id = node.properties.get("device_id")
        part = parts.lookup(AMD_VENDOR, device_id, node.compute_units, name)
        per_cu, waves = node.simd_per_cu, node.properties.get("max_waves_per_simd")
        partitioned = bool(part and node.compute_units and node.compute_units < part.compute_units)
        gpus.append(Gpu(
            index=index, vendor="amd", name=name or (part.name if part else f"AMD GPU {device_id or '?'}"), target=node.target,
            pci_device_id=f"0x{device_id:04x}" if device_id else None, bus_id=node.bus_id,
            compute_units=node.compute_units, simd_per_cu=per_cu,
            wave_size=node.properties.get("wave_front_size") or (agent.wavefront_size if agent else None),
            max_waves_per_cu=(waves * per_cu) if waves and per_cu else None, lds_kib=node.properties.get("lds_size_in_kb"),
            memory_banks=node.properties.get("mem_banks_count"), vram_bytes=node.vram_bytes,
            part_compute_units=part.compute_units if part and partitioned else None,
            part=_named(part, found), evidence=evidence_for(system, node.sources[:1], target=node.target),
        ))
    if not silicon.kfd:
        for index, agent in enumerate(agents):
            part = parts.lookup(AMD_VENDOR, agent.chip_id, agent.compute_units, agent.marketing_name)
            gpus.append(Gpu(
                index=index, vendor="amd", name=agent.marketing_name or agent.name, target=agent.name,
                pci_device_id=f"0x{agent.chip_id:04x}" if agent.chip_id else None, compute_units=agent.compute_units,
                simd_per_cu=agent.simds_per_cu, wave_size=agent.wavefront_size, max_waves_per_cu=agent.max_waves_per_cu,
                part=_named(part, found),
                evidence=evidence_for(system, [runtime.rocminfo_output] if runtime.rocminfo_output else [], target=agent.name),
            ))
    pci_by_bus = {p.address.lower(): p for p in silicon.pci if p.vendor == NVIDIA_VENDOR}
    for gpu in nvidia.gpus:
        bus = (gpu.get("pci.bus_id") or "").lower()
        pci = pci_by_bus.get(bus[-12:]) if bus else None
        part = parts.lookup(NVIDIA_VENDOR, pci.device if pci else None, None, gpu.get("name"))
        total = gpu.number("memory.total")
        gpus.append(Gpu(
            index=gpu.index, vendor="nvidia", name=gpu.get("name") or "NVIDIA GPU", target=gpu.sm,
            pci_device_id=f"0x{pci.device:04x}" if pci else None, bus_id=gpu.get("pci.bus_id"),
            vram_bytes=int(total * 2**20) if total else None, compute_capability=gpu.get("compute_cap"),
            part=_named(part, found),
            evidence=evidence_for(system, [nvidia.query] if nvidia.query else [], target=gpu.sm or "unspecified"),
        ))
    return gpus, found


__all__ = ["ROOT_ENV", "SystemView", "detect"]
