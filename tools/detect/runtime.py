"""Runtime: what ROCr (rocminfo), HIP (hipconfig) and the management tools (amd-smi, rocm-smi) report."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.rocminfo import Agent, parse_rocminfo
from hyperloom.tools.detect.root import Output, SystemView, install_hint
from hyperloom.tools.detect.spans import by_value, counted
from hyperloom.tools.smi.amd import parse_amd_smi, parse_rocm_smi
from hyperloom.tools.smi.readings import SmiReport

GROUND_TRUTH = "rocminfo (ROCr agents), hipconfig --version, amd-smi / rocm-smi -a"


@dataclass
class Runtime:
    agents: list[Agent] = field(default_factory=list)
    module_version: str | None = None
    hip_version: str | None = None
    smi: SmiReport | None = None
    smi_output: Output | None = None
    rocminfo_output: Output | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def gpu_agents(self) -> list[Agent]:
        return [a for a in self.agents if a.is_gpu]


def _missing(system: SystemView, check: str, output: Output, what: str) -> Finding:
    tool = output.command.split()[0]
    return finding.make(
        system, "runtime", check, "unknown", f"{what} not read: {output.why_not(system.timeout_s)}",
        sources=[output], ground_truth=GROUND_TRUTH,
        fix=(install_hint(tool) if output.missing
             else f"run `{output.command}` by hand; a hang here usually means a wedged GPU or driver (check dmesg)"),
    )


def detect_runtime(system: SystemView, amd_expected: bool) -> Runtime:
    result = Runtime()
    add = result.findings.append
    rocminfo = system.run("rocminfo")
    result.rocminfo_output = rocminfo
    if not amd_expected and rocminfo.missing:
        add(finding.make(
            system, "runtime", "rocminfo", "unknown", "no AMD GPU found below this layer; the ROCm runtime not checked",
            sources=[rocminfo], ground_truth=GROUND_TRUTH,
            fix="nothing to do unless this machine has an AMD GPU; then fix the silicon layer first",
        ))
        if system.run("amd-smi").ok or system.run("rocm-smi", "-a").ok:
            add(_smi(system, result))
        return result
    if rocminfo.ok:
        result.agents, result.module_version = parse_rocminfo(rocminfo.text or "")
        add(_agents(system, result, rocminfo))
    else:
        add(_missing(system, "rocminfo", rocminfo, "ROCr agents"))
    hip = system.run("hipconfig", "--version")
    if hip.ok and (version := (hip.text or "").strip().splitlines()[0:1]):
        result.hip_version = version[0].strip()
        add(finding.make(
            system, "runtime", "hip", "ok", f"HIP runtime {result.hip_version}",
            sources=[hip], ground_truth=GROUND_TRUTH, details={"hip_version": result.hip_version},
        ))
    else:
        add(_missing(system, "hip", hip, "HIP version"))
    add(_smi(system, result))
    return result


def _agents(system: SystemView, result: Runtime, rocminfo: Output) -> Finding:
    gpus = result.gpu_agents
    if not gpus:
        return finding.make(
            system, "runtime", "rocminfo", "fail", "rocminfo ran but lists no GPU agent: ROCr cannot use the GPU",
            sources=[rocminfo], ground_truth=GROUND_TRUTH,
            details={"agents": len(result.agents)},
            fix="check the driver layer (groups, /dev/kfd) and unset ROCR_VISIBLE_DEVICES / HSA_OVERRIDE_GFX_VERSION",
        )
    names = counted(f"{a.name} ({a.marketing_name or 'unnamed'})" for a in gpus)
    return finding.make(
        system, "runtime", "rocminfo", "ok", f"ROCr lists {len(gpus)} GPU agent(s): {names}",
        sources=[rocminfo], ground_truth=GROUND_TRUTH,
        details={"gpu_agents": len(gpus), "rock_module_version": result.module_version}, target=gpus[0].name,
    )


def _smi(system: SystemView, result: Runtime) -> Finding:
    """amd-smi first (the current tool), rocm-smi -a where amd-smi is absent or says nothing per GPU."""
    amd = system.run("amd-smi")
    report, output = (parse_amd_smi(amd.text or ""), amd) if amd.ok else (None, amd)
    if report is None or not report.gpus:
        rocm = system.run("rocm-smi", "-a")
        if rocm.ok:
            report, output = parse_rocm_smi(rocm.text or ""), rocm
        elif report is None:
            return _missing(system, "smi", rocm, "clocks, power and memory (amd-smi and rocm-smi)")
    result.smi, result.smi_output = report, output
    rows = {
        g.index: f"perf {g.perf_level or '-'}, power cap {g.power_cap_w or '-'} W"
                 + (f", VRAM {g.vram_used_mb}/{g.vram_total_mb} MB" if g.vram_total_mb else "")
        for g in report.gpus.values()
    }
    return finding.make(
        system, "runtime", "smi", "ok" if report.gpus else "unknown",
        f"{report.tool}: " + (by_value(rows, "GPU") if rows else "no per-GPU values"),
        sources=[output], ground_truth=GROUND_TRUTH,
        details={"tool": report.tool, "driver_version": report.driver_version, "rocm_version": report.rocm_version},
        fix=None if report.gpus else f"run `{output.command}` by hand and compare with rocminfo",
    )
