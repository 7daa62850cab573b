"""Compiler: hipcc and clang versions, llvm-mc with the amdgcn target, and whether it knows each detected target."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperloom.core.toolchain import parse_version
from hyperloom.tools.detect import finding
from hyperloom.tools.detect.models import Finding
from hyperloom.tools.detect.root import Output, SystemView, install_hint

GROUND_TRUTH = "llvm-mc --triple=amdgcn-amd-amdhsa -mcpu=<target> (the assembler hipcc's LLVM uses)"
TRIPLE = "--triple=amdgcn-amd-amdhsa"


def rejects_target(text: str, target: str) -> bool:
    """llvm-mc exits 0 on an unknown -mcpu, but warns and falls back to gfx000."""
    return "not a recognized processor" in text or f"--{target}" not in text


@dataclass
class Compiler:
    versions: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def _version(system: SystemView, tool: str, check: str, result: Compiler) -> Output:
    output = system.run(tool, "--version")
    version, line = parse_version(output.text or "") if output.ok else (None, None)
    if version:
        result.versions[tool] = version
        result.findings.append(finding.make(
            system, "compiler", check, "ok", f"{tool} {version}: {line}",
            sources=[output], ground_truth=GROUND_TRUTH, details={f"{tool}_version": version},
        ))
    else:
        result.findings.append(finding.make(
            system, "compiler", check, "unknown",
            f"{tool} version not read: {output.why_not(system.timeout_s) if not output.ok else 'no version in its output'}",
            sources=[output], ground_truth=GROUND_TRUTH, fix=install_hint(tool),
        ))
    return output


def _hipcc_not_needed(system: SystemView, result: Compiler, hipcc: Output) -> None:
    """hipcc absent beside a working clang is no gap: compile_kernel builds HIP offline with clang."""
    found = next(f for f in result.findings if f.check == "hipcc")
    if hipcc.missing and "clang" in result.versions:
        result.findings[result.findings.index(found)] = finding.make(
            system, "compiler", "hipcc", "ok",
            f"hipcc is not installed, and not needed: clang {result.versions['clang']} compiles HIP offline (compile_kernel uses it)",
            sources=[hipcc], ground_truth=GROUND_TRUTH,
        )


def detect_compiler(system: SystemView, targets: list[str]) -> Compiler:
    """targets: the AMD gfx targets the lower layers found (possibly none)."""
    result = Compiler()
    hipcc = _version(system, "hipcc", "hipcc", result)
    _version(system, "clang", "clang", result)
    _hipcc_not_needed(system, result, hipcc)
    mc = _version(system, "llvm-mc", "llvm_mc", result)
    if mc.ok and "amdgcn" not in (mc.text or ""):
        result.findings.append(finding.make(
            system, "compiler", "llvm_mc_amdgcn", "fail", "llvm-mc is built without the amdgcn target",
            sources=[mc], ground_truth=GROUND_TRUTH,
            fix="install an LLVM with AMDGPU (apt-get install llvm-19) or set HYPERLOOM_LLVM_DIR to ROCm's llvm/bin",
        ))
        return result
    for target in targets:
        result.findings.append(_supports(system, target, mc))
    if not targets:
        # The trap is a compiler too old for the GPU in the machine: with none detected there is nothing to be too old for.
        result.findings.append(finding.make(
            system, "compiler", "trap.compiler_too_old", "ok",
            "no AMD GPU detected, so no target to check this LLVM against; compile_kernel checks each target it is given",
            sources=[mc], ground_truth=GROUND_TRUTH,
        ))
    return result


def _supports(system: SystemView, target: str, mc: Output) -> Finding:
    """Trap: a compiler too old for the detected target (it would fall back to gfx000 or refuse)."""
    check = "trap.compiler_too_old"
    if not mc.ok:
        return finding.make(
            system, "compiler", check, "unknown", f"support for {target} not checked: {mc.why_not(system.timeout_s)}",
            sources=[mc], ground_truth=GROUND_TRUTH, fix=install_hint("llvm-mc"), target=target,
        )
    probe = system.run("llvm-mc", TRIPLE, f"-mcpu={target}")
    if not probe.ok:
        return finding.make(
            system, "compiler", check, "unknown", f"support for {target} not checked: {probe.why_not(system.timeout_s)}",
            sources=[probe], ground_truth=GROUND_TRUTH, fix=install_hint("llvm-mc"), target=target,
        )
    version = parse_version(mc.text or "")[0]
    if rejects_target(probe.text or "", target):
        return finding.make(
            system, "compiler", check, "fail",
            f"llvm-mc {version or ''} does not know {target}: this LLVM is too old for the detected GPU".replace("  ", " "),
            sources=[probe, mc], ground_truth=GROUND_TRUTH, details={"target": target, "llvm_mc_version": version},
            fix=f"install a newer ROCm or LLVM that lists {target} (llc -march=amdgcn -mcpu=help), or set HYPERLOOM_LLVM_DIR to it",
            target=target,
        )
    return finding.make(
        system, "compiler", check, "ok", f"llvm-mc {version or ''} assembles for {target}".replace("  ", " "),
        sources=[probe], ground_truth=GROUND_TRUTH, details={"target": target, "llvm_mc_version": version}, target=target,
    )
