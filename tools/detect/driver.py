"""The driver layer: the amdgpu module, the device nodes ROCm opens, and whether this user may open them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.root import FileRead, Output, SystemView

GROUND_TRUTH = "/sys/module/amdgpu, `ls -l /dev/kfd /dev/dri` and `id`"
# `ls -l` of a character device: mode, links, owner, group, "major, minor", date, name.
_LS_DEVICE = re.compile(r"^(c[rwxsStT-]{9})\S*\s+\d+\s+(\S+)\s+(\S+)\s+\d+,\s*\d+\s+.*\s(\S+)$")
_ID_USER = re.compile(r"uid=(\d+)\(([^)]*)\)")
_ID_GROUP = re.compile(r"\d+\(([^)]*)\)")


@dataclass(frozen=True)
class DeviceNode:
    path: str
    mode: str
    owner: str
    group: str

    def allows(self, user: str, groups: set[str]) -> bool:
        """Read and write for this user: as owner, through the group, or for everyone."""
        if user == "root" or (self.owner == user and self.mode[1:3] == "rw"):
            return True
        return (self.group in groups and self.mode[4:6] == "rw") or self.mode[7:9] == "rw"


def parse_ls(text: str) -> list[DeviceNode]:
    """Character devices from `ls -l /dev/kfd /dev/dri`: full paths, folder entries under their heading."""
    nodes, folder = [], ""
    for line in text.splitlines():
        if line.endswith(":") and line.startswith("/"):
            folder = line[:-1]
            continue
        if match := _LS_DEVICE.match(line.strip()):
            mode, owner, group, name = match.groups()
            nodes.append(DeviceNode(name if name.startswith("/") else f"{folder}/{name}", mode, owner, group))
    return nodes


def parse_id(text: str) -> tuple[str | None, set[str]]:
    """The user name and group names from `id` (uid=1000(ana) gid=1000(ana) groups=1000(ana),44(video))."""
    user = _ID_USER.search(text)
    groups_part = text.split("groups=", 1)[1] if "groups=" in text else ""
    return (user.group(2) if user else None), set(_ID_GROUP.findall(groups_part))


def module_version(system: SystemView) -> tuple[str | None, FileRead]:
    """amdgpu's version from sysfs (set by DKMS builds; the in-tree module has none)."""
    read = system.read("/sys/module/amdgpu/version")
    return ((read.text or "").strip() or None), read


@dataclass
class AmdDriver:
    amd_expected: bool
    nodes: list[DeviceNode] = field(default_factory=list)
    user: str | None = None
    groups: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)


def detect_driver(system: SystemView, amd_expected: bool, pci_amd: bool = False) -> AmdDriver:
    """amd_expected: a lower layer saw an AMD GPU; pci_amd: the PCI bus lists one."""
    result = AmdDriver(amd_expected)
    add = result.findings.append
    if not amd_expected:
        add(finding.make(
            system, "driver", "amdgpu", "unknown", "no AMD GPU found below this layer; amdgpu not checked",
            sources=[system.read("/sys/module/amdgpu/initstate")], ground_truth=GROUND_TRUTH,
            fix="nothing to do unless this machine has an AMD GPU; then fix the silicon layer first",
        ))
        return result
    listing = system.run("ls", "-l", "/dev/kfd", "/dev/dri")
    ident = system.run("id")
    result.nodes = parse_ls(listing.text or "")
    result.user, result.groups = parse_id(ident.text or "")
    add(_module(system, result, pci_amd))
    add(_device_nodes(system, result, listing))
    add(_access(system, result, listing, ident))
    return result


def _device_nodes(system: SystemView, result: AmdDriver, listing: Output) -> Finding:
    kfd = [n for n in result.nodes if n.path == "/dev/kfd"]
    renders = [n for n in result.nodes if "/renderD" in n.path]
    details = {"kfd": bool(kfd), "render_nodes": ",".join(n.path for n in renders)}
    if not listing.ok:
        return finding.make(
            system, "driver", "device_nodes", "unknown", f"device nodes not listed: {listing.why_not(system.timeout_s)}",
            sources=[listing], ground_truth=GROUND_TRUTH, fix="check /dev/kfd and /dev/dri/renderD* by hand (ls -l)",
        )
    if not kfd or not renders:
        missing = "/dev/kfd" if not kfd else "/dev/dri/renderD*"
        return finding.make(
            system, "driver", "device_nodes", "fail", f"{missing} is missing: ROCm cannot open the GPU",
            sources=[listing], ground_truth=GROUND_TRUTH, details=details,
            fix="load amdgpu; in a container pass --device=/dev/kfd --device=/dev/dri",
        )
    return finding.make(
        system, "driver", "device_nodes", "ok", f"/dev/kfd and {len(renders)} render node(s) present",
        sources=[listing], ground_truth=GROUND_TRUTH, details=details,
    )


def _access(system: SystemView, result: AmdDriver, listing: Output, ident: Output) -> Finding:
    """Trap: the user is not in the group (render or video) that owns /dev/kfd and /dev/dri/renderD*."""
    check = "trap.render_video_groups"
    if not listing.ok or not ident.ok or result.user is None:
        missing = listing if not listing.ok else ident
        return finding.make(
            system, "driver", check, "unknown", f"group membership not checked: {missing.why_not(system.timeout_s)}",
            sources=[listing, ident], ground_truth=GROUND_TRUTH, fix="run `id` and `ls -l /dev/kfd /dev/dri` by hand",
        )
    gpu_nodes = [n for n in result.nodes if n.path == "/dev/kfd" or "/renderD" in n.path]
    blocked = [n for n in gpu_nodes if not n.allows(result.user, result.groups)]
    details = {"user": result.user, "groups": ",".join(sorted(result.groups))}
    if blocked:
        needed = sorted({n.group for n in blocked})
        return finding.make(
            system, "driver", check, "fail",
            f"user {result.user} cannot open {', '.join(n.path for n in blocked)} (owned by group {', '.join(needed)}, "
            "which the user is not in): HIP sees no GPU",
            sources=[listing, ident], ground_truth=GROUND_TRUTH, details=details,
            fix=f"sudo usermod -aG {','.join(sorted({*needed, 'render', 'video'}))} {result.user}, then log in again",
        )
    return finding.make(
        system, "driver", check, "ok", f"user {result.user} may open /dev/kfd and the render nodes",
        sources=[listing, ident], ground_truth=GROUND_TRUTH, details=details,
    )


def _module(system: SystemView, result: AmdDriver, pci_amd: bool) -> Finding:
    """amdgpu is loaded when sysfs shows the module or KFD, or /dev/kfd exists; missing while the PCI bus lists an AMD GPU fails."""
    version, read = module_version(system)
    loaded = system.exists("/sys/module/amdgpu") or system.exists("/sys/class/kfd/kfd") or any(n.path == "/dev/kfd" for n in result.nodes)
    if loaded:
        return finding.make(
            system, "driver", "amdgpu", "ok",
            "amdgpu is "
            f"loaded{f', version {version}' if version else ' (no /sys/module/amdgpu/version: an in-tree module, or not readable)'}",
            sources=[read], ground_truth=GROUND_TRUTH, details={"amdgpu_version": version},
        )
    if pci_amd:
        return finding.make(
            system, "driver", "amdgpu", "fail", "an AMD GPU is on the PCI bus but amdgpu is not loaded",
            sources=[read], ground_truth=GROUND_TRUTH,
            fix="modprobe amdgpu (install amdgpu-dkms or a kernel with amdgpu); check dmesg for firmware errors",
        )
    return finding.make(
        system, "driver", "amdgpu", "unknown", "amdgpu's state is not readable: no /sys/module/amdgpu, /sys/class/kfd or /dev/kfd",
        sources=[read], ground_truth=GROUND_TRUTH, fix="check `lsmod | grep amdgpu` and dmesg on the host",
    )
