"""The isa tools as their fronts call them: isa_census (summarised, paged), isa_probe and isa_audit."""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.codeobj.disasm import base_mnemonic, disassemble_member
from hyperloom.tools.codeobj.formats import Kind, read_members
from hyperloom.tools.isa.census import census
from hyperloom.tools.isa.code_objects import code_object_files
from hyperloom.tools.isa.compare import compare
from hyperloom.tools.isa.models import (
    AuditRequest,
    AuditResult,
    CapabilitySummary,
    CapabilityUse,
    CensusRequest,
    CensusResult,
    CodeObjectSeen,
    ProbeLine,
    ProbeRequest,
    ProbeResult,
)
from hyperloom.tools.isa.probe import assemble_lines, check_line, classify
from hyperloom.tools.isa.summary import shortened, summarise
from hyperloom.tools.isa.targets import find_llvm_mc, require_known

PROOF_SHOWN = 4  # instructions proving each capability in a census summary
AUDIT_SHOWN = 5  # kernels and instructions an audit lists per capability


def run_census(request: CensusRequest, workspace: Workspace, progress: ProgressFn | None = None) -> CensusResult:
    """The census of request.target (cached unless refresh), summarised, optionally listed or compared."""
    del workspace  # the census reads no caller files
    llvm = find_llvm_mc()
    target_census, from_cache = census(request.target, refresh=request.refresh, llvm=llvm, progress=progress)
    listing = [i for i in target_census.instructions if request.match in i.name] if request.match else target_census.instructions
    listed = request.detail or request.match is not None
    end = request.offset + request.limit
    comparison = None
    if request.compare_to is not None:
        from hyperloom.tools.isa.renames import renames  # the assembler's modules: only a comparison needs them

        other, _ = census(request.compare_to, refresh=request.refresh, llvm=llvm)
        comparison = compare(target_census, other, request.offset, request.limit, renames(target_census, other, llvm.path))
    longest = max(
        len(listing) if listed else 0,
        comparison.only_in_target_count if comparison else 0,
        comparison.only_in_other_count if comparison else 0,
        comparison.renamed_count if comparison else 0,
    )
    paged = listed or comparison is not None
    return CensusResult(
        target=target_census.target,
        generation=target_census.generation,
        llvm_version=target_census.llvm.version,
        summary=summarise(target_census, comparison, listed, paged),
        canonical_count=target_census.canonical_count,
        alias_count=target_census.alias_count,
        families=target_census.families,
        # a page of a listing or a comparison carries that; the capabilities come once, in the plain summary
        capabilities_present=[] if paged else [
            CapabilitySummary(name=c.name, description=c.description, proof=c.instructions[:PROOF_SHOWN], proof_count=len(c.instructions))
            for c in target_census.capabilities
            if c.present
        ],
        capabilities_absent=[] if paged else [c.name for c in target_census.capabilities if not c.present],
        checks=shortened(target_census.checks),
        instructions=listing[request.offset : end] if listed else [],
        listed_total=len(listing) if listed else 0,
        next_offset=end if end < longest else None,
        compare=comparison,
        from_cache=from_cache,
        version_note=target_census.version_note,
        evidence=target_census.evidence,
    )


def run_probe(request: ProbeRequest, workspace: Workspace, progress: ProgressFn | None = None) -> ProbeResult:
    """isa_probe: each line accepted (with its canonical spelling and bytes) or rejected with LLVM's error class."""
    del workspace, progress  # one short llvm-mc run on the caller's own text
    llvm = find_llvm_mc()
    require_known(request.target, llvm)
    lines = [check_line(line) for line in request.lines]
    outcomes = assemble_lines(llvm.path, request.target, lines, "+wavefrontsize64" if request.wave64 else None)
    rows = []
    for outcome in outcomes:
        error = outcome.error if outcome.error is not None or outcome.printed else "no instruction was emitted for this line"
        rows.append(
            ProbeLine(
                line=outcome.line,
                accepted=error is None,
                error_class=classify(error) if error is not None else None,
                message=error,
                printed=outcome.printed,
                encoding=outcome.encoding,
            )
        )
    accepted = sum(row.accepted for row in rows)
    mode = "wave64" if request.wave64 else "default wave size"
    summary = f"{accepted} of {len(rows)} line(s) assemble for {request.target} ({mode}) with llvm-mc {llvm.version}"
    if rejected := [row for row in rows if not row.accepted]:
        summary += "; rejected: " + "; ".join(f"{row.line!r}: {row.error_class}" for row in rejected[:5])
        summary += "…" if len(rejected) > 5 else ""
    return ProbeResult(
        target=request.target,
        wave64=request.wave64,
        accepted=accepted,
        rejected=len(rows) - accepted,
        lines=rows,
        summary=summary,
        evidence=measured(
            "isa_probe",
            inputs_sha256=sha256_json([llvm.sha256, request.target, request.wave64, lines]),
            target=request.target,
            toolchain=llvm.toolchain,
        ),
    )


def run_audit(request: AuditRequest, workspace: Workspace, progress: ProgressFn | None = None) -> AuditResult:
    """Disassemble the code objects built for request.target and set their instructions against its census."""
    llvm = find_llvm_mc()
    target_census, _ = census(request.target, llvm=llvm)
    files = code_object_files(request.paths, workspace)
    seen: list[CodeObjectSeen] = []
    skipped: list[str] = []
    per_kernel: dict[str, set[str]] = {}
    digests = []
    objdump = ""
    for done, path in enumerate(files, start=1):
        label = workspace.relative(path)
        try:
            members = read_members(path, label)
        except HyperloomError as exc:
            skipped.append(f"{label}: {exc.cause}")
            continue
        digests.append(sha256_file(path))
        for member in members:
            where = f"{label} [{member.bundle_triple}]" if member.bundle_triple else label
            if member.kind is not Kind.AMDGPU:
                skipped.append(f"{where}: an NVIDIA cubin")
                continue
            listing = disassemble_member(member, where, path)
            objdump = listing.tool.version if listing.tool and listing.tool.version else objdump
            if listing.target != request.target:
                skipped.append(f"{where}: built for {listing.target}, not {request.target}")
                continue
            seen.append(CodeObjectSeen(path=where, kernels=sorted(listing.symbols)))
            for symbol, instructions in listing.symbols.items():
                per_kernel.setdefault(symbol, set()).update(base_mnemonic(i.mnemonic) for i in instructions)
        if progress is not None:
            progress(done, len(files))
    if not seen:
        raise HyperloomError(
            f"none of the code objects is built for {request.target} ({'; '.join(skipped[:5])})",
            "audit with the target the code objects were built for, or rebuild them with --offload-arch=" + request.target,
        )
    used = set().union(*per_kernel.values())
    capabilities = []
    for entry in target_census.capabilities:
        if not entry.present:
            continue
        hits = [name for name in entry.instructions if name in used]
        capabilities.append(
            CapabilityUse(
                name=entry.name,
                description=entry.description,
                used=bool(hits),
                used_instructions=hits,
                kernels=[k for k, names in sorted(per_kernel.items()) if names & set(hits)][:AUDIT_SHOWN],
                available=entry.instructions[:AUDIT_SHOWN],
            )
        )
    unused = [c.name for c in capabilities if not c.used]
    known = target_census.names("canonical") | target_census.names("alias")
    kernels = sum(len(s.kernels) for s in seen)
    summary = (
        f"{request.target}: {kernels} kernel(s) in {len(seen)} code object(s) use {len(used)} distinct instructions and "
        f"{len(capabilities) - len(unused)} of the target's {len(capabilities)} capabilities; never used: {', '.join(unused) or 'none'}."
    )
    return AuditResult(
        target=request.target,
        summary=summary,
        code_objects=seen,
        skipped=skipped,
        distinct_instructions=len(used),
        unused_capabilities=unused,
        capabilities=capabilities,
        not_in_census=sorted(used - known),
        evidence=measured(
            "isa_audit",
            inputs_sha256=combine_digests([target_census.evidence.inputs_sha256, *digests]),
            target=request.target,
            toolchain={**llvm.toolchain, "llvm-objdump": objdump or "unknown"},
        ),
    )
