"""The kernels of a code object with their instructions, each judged by an expect or forbid rule or for spills."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.codeobj.disasm import Listing, base_mnemonic, disassemble_member
from hyperloom.tools.codeobj.formats import Kind, read_members
from hyperloom.tools.codeobj.metadata import kernel_resources
from hyperloom.tools.codeobj.sass import disassemble_cubin, sass_base
from hyperloom.tools.verify.models import Count, KernelSummary, RuleVerdict
from hyperloom.tools.verify.rules import Rule, matches, patterns_for
from hyperloom.tools.verify.spellings import spelling


@dataclass
class KernelCode:
    """One kernel's instructions and declared spill / scratch figures, on one target."""

    name: str
    listing: Listing
    vgpr_spills: int | None
    sgpr_spills: int | None
    scratch_bytes: int | None

    @property
    def target(self) -> str:
        return self.listing.target

    @cached_property
    def counts(self) -> Counter[str]:
        return self.listing.counts(self.name)

    def matching(self, patterns: tuple[str, ...]) -> set[str]:
        """The distinct mnemonics of this kernel that fit any of `patterns`."""
        base = sass_base if self.target.startswith("sm_") else base_mnemonic
        return {m for m in self.counts if patterns and matches(m, base(m), patterns)}

    def lines(self, mnemonics: set[str], keep: int) -> list[str]:
        return [f"{ins.address:#x}: {ins.text}" for ins in self.listing.find(self.name, mnemonics, keep)] if mnemonics and keep else []


def load_kernels(path, label: str) -> tuple[list[KernelCode], dict[str, str]]:
    """Every kernel in the code object at `path` (AMDGPU members or a cubin), and the disassemblers' versions."""
    kernels: list[KernelCode] = []
    tools: dict[str, str] = {}
    for member in read_members(path, label):
        if member.kind is Kind.CUBIN:
            listing, usage = disassemble_cubin(path, label)
            for name in listing.texts:
                res = usage.get(name, {})  # per-thread stack frame plus local memory: NVIDIA's scratch
                kernels.append(KernelCode(name, listing, None, None, res.get("STACK", 0) + res.get("LOCAL", 0) if res else None))
        else:
            listing = disassemble_member(member, label, path)
            for k in kernel_resources(member.data):
                kernels.append(KernelCode(k.name, listing, k.vgpr_spills, k.sgpr_spills, k.scratch_bytes))
        if listing.tool is not None:
            tools[listing.tool.name] = listing.tool.version or "unknown"
    if not kernels:
        raise HyperloomError(f"{label} holds no kernels", "check that the source defines __global__ kernels with extern \"C\" names")
    return kernels, tools


def judge_rule(kernel: KernelCode, rule: Rule, kind: str, keep: int) -> RuleVerdict:
    patterns = patterns_for(rule, kernel.target)
    matched = kernel.matching(patterns)
    found = sum(kernel.counts[m] for m in matched)
    note = None
    if not patterns:
        note = f"{kernel.target} has no instruction in {rule.pattern}; the target lacks that capability"
    return RuleVerdict(
        kernel=kernel.name,
        kind=kind,
        rule=rule.text,
        passed=rule.holds(found),
        found=found,
        requirement="never" if kind == "forbid" else rule.requirement,
        matched=sorted(matched),
        lines=kernel.lines(matched, keep),
        note=note,
    )


def spill_verdict(kernel: KernelCode, keep: int) -> RuleVerdict:
    matched = kernel.matching(spelling("scratch", kernel.target))
    found = sum(kernel.counts[m] for m in matched)
    spills = (kernel.vgpr_spills or 0) + (kernel.sgpr_spills or 0)
    if spills:
        passed, note = False, (
            f"spills {kernel.vgpr_spills or 0} VGPRs and {kernel.sgpr_spills or 0} SGPRs to {kernel.scratch_bytes or 0} "
            "bytes of scratch per lane; cut register pressure (smaller tiles, fewer live values) or raise the register budget"
        )
    elif found and not kernel.scratch_bytes:
        passed, note = False, "scratch accesses in a kernel that declares no scratch"
    else:
        passed = True
        note = (f"no spills; {kernel.scratch_bytes} bytes of declared scratch (private arrays)" if kernel.scratch_bytes
                else "no spills, no scratch")
    return RuleVerdict(
        kernel=kernel.name,
        kind="spills",
        rule="no register spills",
        passed=passed,
        found=found,
        requirement="no spilled registers; scratch only where declared",
        matched=sorted(matched),
        lines=kernel.lines(matched, keep),
        note=note,
    )


def kernel_summary(kernel: KernelCode, top: int) -> KernelSummary:
    return KernelSummary(
        name=kernel.name,
        target=kernel.target,
        instructions=sum(kernel.counts.values()),
        histogram=[Count(mnemonic=m, count=c) for m, c in kernel.counts.most_common(top)],
        vgpr_spills=kernel.vgpr_spills,
        sgpr_spills=kernel.sgpr_spills,
        scratch_bytes=kernel.scratch_bytes,
    )
