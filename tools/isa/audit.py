"""The unused-instruction audit: which of a target's capabilities its kernels never use."""

from __future__ import annotations

import os
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_file
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.codeobj.disasm import base_mnemonic, disassemble_member
from hyperloom.tools.codeobj.formats import BUNDLE_MAGIC, ELF_MAGIC, Kind, read_members
from hyperloom.tools.isa.census import census
from hyperloom.tools.isa.models import AuditRequest, AuditResult, CapabilityUse, CodeObjectSeen
from hyperloom.tools.isa.targets import find_llvm_mc

MAX_FILES = 1000
SHOWN = 5


def code_object_files(raw_paths: list[str], workspace: Workspace) -> list[Path]:
    """The files named, and the code objects (ELF or offload bundle) found under named folders.

    Links that lead out of the workspace are not followed.
    """
    files: list[Path] = []
    for raw in raw_paths:
        path = workspace.resolve(raw)
        if not path.is_dir():
            files.append(path)
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                real = Path(os.path.realpath(Path(root) / name))
                if workspace.root in real.parents and real.is_file() and _looks_like_code_object(real):
                    files.append(real)
            if len(files) > MAX_FILES:
                raise HyperloomError(f"more than {MAX_FILES} code objects under {raw!r}", "name the folders or files to audit more narrowly")
    if not files:
        raise HyperloomError(f"no code objects (ELF or offload bundle) under {', '.join(raw_paths)}", "pass .hsaco/.co files or folders holding them")
    return list(dict.fromkeys(files))


def _looks_like_code_object(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(BUNDLE_MAGIC))
    except OSError:
        return False
    return head.startswith(ELF_MAGIC) or head.startswith(BUNDLE_MAGIC)


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
                kernels=[k for k, names in sorted(per_kernel.items()) if names & set(hits)][:SHOWN],
                available=entry.instructions[:SHOWN],
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
