"""Silicon: what the kernel's KFD topology and the PCI bus say the hardware is."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.root import FileRead, SystemView
from hyperloom.tools.detect.spans import by_value

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
PCI_DEVICES = "/sys/bus/pci/devices"
AMD_VENDOR, NVIDIA_VENDOR = 0x1002, 0x10DE
GROUND_TRUTH = f"{KFD_NODES}/*/properties (KFD topology) and {PCI_DEVICES}/*/{{vendor,device,class}}"
# FB public and private heaps: the card's own memory (kfd_topology.h HSA_MEM_HEAP_TYPE_FB_*).
VRAM_HEAP_TYPES = {1, 2}


def parse_properties(text: str) -> dict[str, int]:
    """A KFD `properties` file: one 'name value' pair per line, values unsigned integers."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            values[parts[0]] = int(parts[1])
    return values


def gfx_name(version: int) -> str | None:
    """gfx_target_version (major*10000 + minor*100 + stepping) as a target name; minor and
    stepping print in hex, as libhsakmt does: 120001 → gfx1201, 90010 → gfx90a. 0 (a CPU node) → None."""
    if version <= 0:
        return None
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def bus_id(domain: int, location_id: int) -> str:
    """KFD location_id packs bus<<8 | device<<3 | function."""
    return f"{domain:04x}:{location_id >> 8:02x}:{(location_id >> 3) & 0x1F:02x}.{location_id & 0x7:x}"


@dataclass
class KfdGpu:
    node: int
    target: str
    properties: dict[str, int]
    vram_bytes: int | None
    sources: list[FileRead]

    @property
    def simd_per_cu(self) -> int | None:
        return self.properties.get("simd_per_cu") or None

    @property
    def compute_units(self) -> int | None:
        simds, per_cu = self.properties.get("simd_count"), self.simd_per_cu
        return simds // per_cu if simds and per_cu else None

    @property
    def bus_id(self) -> str | None:
        if "location_id" not in self.properties:
            return None
        return bus_id(self.properties.get("domain", 0), self.properties["location_id"])


@dataclass
class PciGpu:
    address: str
    vendor: int
    device: int
    pci_class: int


@dataclass
class Silicon:
    kfd: list[KfdGpu] = field(default_factory=list)
    pci: list[PciGpu] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def _vram(system: SystemView, node: str) -> tuple[int | None, list[FileRead]]:
    reads, total = [], 0
    for bank in system.listdir(f"{KFD_NODES}/{node}/mem_banks"):
        read = system.read(f"{KFD_NODES}/{node}/mem_banks/{bank}/properties")
        reads.append(read)
        values = parse_properties(read.text or "")
        if values.get("heap_type") in VRAM_HEAP_TYPES:
            total += values.get("size_in_bytes", 0)
    return (total or None), reads


def read_kfd(system: SystemView) -> tuple[list[KfdGpu], list[Finding]]:
    nodes = sorted((n for n in system.listdir(KFD_NODES) if n.isdigit()), key=int)
    if not nodes:
        missing = system.read(KFD_NODES)
        return [], [finding.make(
            system, "silicon", "kfd_topology", "unknown",
            f"no KFD topology at {KFD_NODES}: amdgpu's compute interface is not loaded, or this is not an AMD GPU machine",
            sources=[missing], ground_truth=GROUND_TRUTH,
            fix="on an AMD GPU machine: load amdgpu (modprobe amdgpu) and check dmesg for KFD errors; in a container, mount /sys",
        )]
    gpus: list[KfdGpu] = []
    findings: list[Finding] = []
    for node in nodes:
        read = system.read(f"{KFD_NODES}/{node}/properties")
        values = parse_properties(read.text or "")
        if read.text is None or "gfx_target_version" not in values and "simd_count" not in values:
            findings.append(finding.make(
                system, "silicon", f"kfd_node_{node}", "unknown",
                f"KFD node {node}: properties {read.error or 'hold no gfx_target_version or simd_count'}",
                sources=[read], ground_truth=GROUND_TRUTH,
                fix=f"read {KFD_NODES}/{node}/properties as the user running the kernels; check dmesg for amdgpu/KFD errors",
            ))
            continue
        target = gfx_name(values.get("gfx_target_version", 0))
        if target is None or values.get("simd_count", 0) == 0:
            continue  # a CPU node
        vram, bank_reads = _vram(system, node)
        gpus.append(KfdGpu(int(node), target, values, vram, [read, *bank_reads]))
    if gpus:
        described = by_value({g.node: f"{g.target} ({g.compute_units} CUs)" for g in gpus}, "node", "nodes")
        findings.insert(0, finding.make(
            system, "silicon", "kfd_topology", "ok", f"{len(gpus)} AMD GPU node(s) in the KFD topology: {described}",
            sources=[s for g in gpus for s in g.sources[:1]], ground_truth=GROUND_TRUTH,
            details={"gpu_nodes": len(gpus), "targets": ",".join(sorted({g.target for g in gpus}))},
            target=gpus[0].target,
        ))
    elif not findings:
        findings.append(finding.make(
            system, "silicon", "kfd_topology", "unknown",
            f"the KFD topology lists {len(nodes)} node(s) but no GPU node (every gfx_target_version is 0)",
            sources=[system.read(f"{KFD_NODES}/{nodes[0]}/properties")], ground_truth=GROUND_TRUTH,
            fix="check dmesg for amdgpu errors; an unsupported or disabled GPU is left out of the topology",
        ))
    return gpus, findings


def _hex(text: str | None) -> int | None:
    try:
        return int((text or "").strip(), 16)
    except ValueError:
        return None


def read_pci(system: SystemView) -> list[PciGpu]:
    """AMD and NVIDIA display controllers and accelerators on the PCI bus (class 0x03xxxx or 0x12xxxx)."""
    found = []
    for address in system.listdir(PCI_DEVICES):
        base = f"{PCI_DEVICES}/{address}"
        vendor = _hex(system.read(f"{base}/vendor").text)
        if vendor not in (AMD_VENDOR, NVIDIA_VENDOR):
            continue
        device, pci_class = _hex(system.read(f"{base}/device").text), _hex(system.read(f"{base}/class").text)
        if device is not None and pci_class is not None and (pci_class >> 16) in (0x03, 0x12):
            found.append(PciGpu(address, vendor, device, pci_class))
    return found


def detect_silicon(system: SystemView) -> Silicon:
    kfd, findings = read_kfd(system)
    pci = read_pci(system)
    listed = system.read(PCI_DEVICES)
    if pci:
        names = ", ".join(f"{p.address} {p.vendor:04x}:{p.device:04x}" for p in pci)
        findings.append(finding.make(
            system, "silicon", "pci", "ok", f"{len(pci)} GPU(s) on the PCI bus: {names}",
            sources=[system.read(f"{PCI_DEVICES}/{p.address}/device") for p in pci], ground_truth=GROUND_TRUTH,
            details={"amd": sum(p.vendor == AMD_VENDOR for p in pci), "nvidia": sum(p.vendor == NVIDIA_VENDOR for p in pci)},
        ))
    elif system.listdir(PCI_DEVICES):
        findings.append(finding.make(
            system, "silicon", "pci", "unknown", "no AMD or NVIDIA GPU on the PCI bus",
            sources=[listed], ground_truth=GROUND_TRUTH,
            fix="run on a machine with an AMD or NVIDIA GPU; kernels can still be compiled and disassembled here",
        ))
    else:
        findings.append(finding.make(
            system, "silicon", "pci", "unknown", f"{PCI_DEVICES} is not readable (a container without /sys?)",
            sources=[listed], ground_truth=GROUND_TRUTH,
            fix="mount the host's /sys read-only into the container, or run detect on the host",
        ))
    return Silicon(kfd, pci, findings)

