"""Kernel changes as candidates: a new source file, or a unified diff against the baseline or any recorded candidate,
entering a running session with its parent and a note.

The source is stored in the session (sources/<sha256><suffix>) and the candidate names it by the reserved parameter
SOURCE. It is built when proposed, so that a change that builds to a code object the session already holds (a
whitespace edit, a renamed local) is answered "not new" at once instead of being timed again; a change that does not
build is queued all the same, and recorded with its compiler error. Each proposal's parent and note are kept in the
ledger's lineage, which the report draws as a tree with each change's measured gain over its parent and the baseline.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_bytes
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.candidate import Unbuilt, build_candidate, built_digest
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.tune.ledger import Lineage
from hyperloom.tools.tune.models import ProposeRequest, ProposeResult
from hyperloom.tools.tune.session import StoredSession, candidate_digest, queue_candidate, session_launchable, with_source
from hyperloom.tools.tune.space import SOURCE, Params

PATCH_TIMEOUT_S = 30.0
MAX_SOURCE_BYTES = 4 << 20


def propose_source(stored: StoredSession, request: ProposeRequest, params: Params, workspace: Workspace) -> ProposeResult:
    """Store the proposal's source (the file, or the diff applied to its parent's), build it, and queue it unless the
    session holds its code object already."""
    baseline = session_launchable(stored, workspace)
    parent = request.parent or candidate_digest(stored.manifest, {})
    parent_source = parent_source_path(stored, baseline, parent, workspace)
    text = _new_source(request, parent_source, workspace)
    digest = sha256_bytes(text)
    stored_path = stored.folder / "sources" / f"{digest}{parent_source.suffix}"
    stored_path.parent.mkdir(exist_ok=True)
    if not stored_path.is_file():
        stored_path.write_bytes(text)
    candidate = {**params, SOURCE: digest[:32]}
    built = build_candidate(with_source(baseline, stored_path), params, workspace,
                            expect=list(stored.manifest.request.get("expect", [])), forbid=list(stored.manifest.request.get("forbid", [])))
    build_sha256 = None if isinstance(built, Unbuilt) else built_digest(built.launchable, workspace.root / built.build.code_object)
    kind = "diff" if request.diff else "source"
    same = stored.ledger.same_build(build_sha256) if build_sha256 else None
    if same is not None:
        stored.ledger.add_lineage(Lineage(hash=f"not-new-{digest[:16]}", parent=parent, source=workspace.relative(stored_path), kind=kind,
                                          note=request.note, build_sha256=build_sha256, same_as=same))
        return ProposeResult(accepted=False, hash=same,
                             summary=f"not new: it builds to the same code object as candidate {same[:16]} (a change the compiler ignores)")
    result = queue_candidate(stored.manifest, stored.ledger, candidate, request.note or kind)
    if result.accepted:
        stored.ledger.add_lineage(Lineage(hash=result.hash, parent=parent, source=workspace.relative(stored_path), kind=kind,
                                          note=request.note, build_sha256=build_sha256))
    return result


def parent_source_path(stored: StoredSession, baseline: Launchable, parent: str, workspace: Workspace) -> Path:
    """The source file of the candidate `parent` names: a recorded source change's, else the baseline variant's."""
    if parent != candidate_digest(stored.manifest, {}):
        lineage = stored.ledger.lineage().get(parent)
        known = parent in stored.ledger.hashes() or stored.ledger.queued(parent)
        if not known:
            raise HyperloomError(f"no candidate {parent[:16]} in session {stored.id!r}",
                                 "give parent as a hash tune status or tune report lists, or leave it out for the baseline")
        if lineage is not None and lineage.source:
            return workspace.resolve(lineage.source, what="parent's source")
    return baseline.loaded.source_of(baseline.variant)[0]


def _new_source(request: ProposeRequest, parent: Path, workspace: Workspace) -> bytes:
    if (request.source is None) == (request.diff is None):
        raise HyperloomError("a source proposal gives either source (a file) or diff (a unified diff), not both or neither",
                             "pass one of them")
    if request.source is not None:
        path = workspace.resolve(request.source, what="source")
        if path.suffix != parent.suffix:
            raise HyperloomError(f"{request.source} is a {path.suffix or 'suffix-less'} file; the session's kernel is {parent.suffix}",
                                 f"propose a {parent.suffix} file with the same entry and signature")
        text = path.read_bytes()
    else:
        text = apply_diff(parent.read_bytes(), request.diff or "", parent.suffix)
    if len(text) > MAX_SOURCE_BYTES:
        raise HyperloomError(f"the proposed source is {len(text)} bytes", f"propose a kernel source under {MAX_SOURCE_BYTES >> 20} MiB")
    return text


def apply_diff(parent: bytes, diff: str, suffix: str) -> bytes:
    """`parent` with the unified `diff` applied (GNU patch, in a scratch folder), or a clear error naming the hunk that failed."""
    with tempfile.TemporaryDirectory(prefix="hyperloom-patch-") as tmp:
        target = Path(tmp) / f"kernel{suffix}"
        target.write_bytes(parent)
        (Path(tmp) / "change.diff").write_text(diff)
        try:
            done = subprocess.run(["patch", "--batch", "--forward", "--silent", "--fuzz=0", "--no-backup-if-mismatch", "-r", "-",
                                   str(target), "change.diff"],
                                  cwd=tmp, capture_output=True, text=True, timeout=PATCH_TIMEOUT_S)
        except FileNotFoundError as exc:
            raise HyperloomError("GNU patch is not installed", "apt-get install patch, or propose the whole source file instead") from exc
        if done.returncode != 0:
            detail = (done.stdout + done.stderr).strip()[-400:] or f"patch exited {done.returncode}"
            raise HyperloomError(f"the diff does not apply to the parent's source: {detail}",
                                 "make the diff against the parent's source (tune report shows each candidate's)")
        return target.read_bytes()
