"""The session folder: manifest.json (written once, atomically), ledger.sqlite, frozen inputs and references.

Opening an existing folder checks that it is a tune session, that it is this spec's, and that its frozen
references are intact; anything else is a clear error, never a silent restart. A session owns its ledger:
it opens it, and closing the session (or leaving its `with` block) closes it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from hyperloom import __version__
from hyperloom.core.dtypes import load_npy
from hyperloom.core.atomic import staged_directory
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device
from hyperloom.core.hashing import combine_digests, sha256_file
from hyperloom.core.workspace import STATE_DIR, Workspace
from hyperloom.tools.pipeline.launch import Launchable, prepare, specialize
from hyperloom.tools.pipeline.trial import stage_input_set, staged_inputs
from hyperloom.tools.gate.freeze import freeze, load_reference_set
from hyperloom.tools.gate.models import FreezeRequest
from hyperloom.tools.kernelspec.load import LoadedSpec, load_spec, output_buffers
from hyperloom.tools.pipeline.audit import StagedSet
from hyperloom.tools.tune.ledger import Ledger
from hyperloom.tools.tune.manifest import Manifest, read_manifest
from hyperloom.tools.tune.models import ProposeResult, TuneRequest
from hyperloom.tools.tune.space import SOURCE, VARIANT, Params, candidate_hash, split_variant

LEDGER, REPORT, BREAKDOWN = "ledger.sqlite", "report.md", "breakdown.json"
SESSIONS_DIR = Path(STATE_DIR) / "tune"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}")
# Fields that make a session what it is; the rest (stop rules, workers) may change on resume.
IDENTITY = ("spec", "variant", "search_variants", "target", "shape", "strategy", "seed", "expect", "forbid", "storage", "study")


@dataclass
class StoredSession:
    """A session folder opened: its manifest and its ledger, which closing the session closes."""

    id: str
    folder: Path
    manifest: Manifest
    ledger: Ledger

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> StoredSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> None:
        self.close()


@dataclass
class Session(StoredSession):
    """A session opened to run: also its launchables, the own variant's and those of the further variants searched."""

    launchable: Launchable = field(kw_only=True)  # the session's own variant: the baseline's
    others: dict[str, Launchable] = field(default_factory=dict, kw_only=True)  # further variants searched, by name

    @property
    def identity(self) -> str:
        return self.manifest.identity_sha256

    def launchable_for(self, params: Params) -> tuple[Launchable, Params]:
        """The candidate's variant (VARIANT in params, else the session's own), its own source when SOURCE names one,
        and the rest of its params."""
        variant, rest = split_variant(params, self.launchable.variant_name, self.others)
        launchable = self.others.get(variant, self.launchable)
        if SOURCE in rest:
            launchable = with_source(launchable, stored_source(self.folder, str(rest.pop(SOURCE))))
        return launchable, rest

    def inputs(self, input_set: str) -> Path:
        return self.folder / "inputs" / input_set

    def staged_sets(self, workspace: Workspace) -> list[StagedSet]:
        """Each input set's inputs and frozen references, read back (for the reference audit)."""
        staged = []
        for name in self.launchable.input_sets:
            paths = load_reference_set(self.references(name), workspace).reference_paths
            outputs = [a.name for a in output_buffers(self.launchable.loaded.spec)]
            staged.append(StagedSet(name, staged_inputs(self.inputs(name)), {o: load_npy(p) for o, p in zip(outputs, paths, strict=True)}))
        return staged

    def references(self, input_set: str) -> Path:
        return self.folder / "references" / input_set


def with_source(launchable: Launchable, source: Path) -> Launchable:
    """`launchable` with its variant's source replaced by `source` (same entry, same signature)."""
    return replace(launchable, variant=launchable.variant.model_copy(update={"source": os.path.relpath(source, launchable.loaded.folder)}))


def stored_source(folder: Path, digest: str) -> Path:
    """The source a session stored under the sha256 (prefix) `digest` (tools/tune/sources.py)."""
    found = sorted((folder / "sources").glob(f"{digest}*"))
    if not found:
        raise HyperloomError(f"the session has no stored source {digest[:16]}", "propose the source again with tune propose")
    return found[0]


def session_launchable(stored: StoredSession, workspace: Workspace) -> Launchable:
    """The session's own variant as a launchable, from its manifest (for a call that needs no inputs: building a proposal)."""
    manifest = stored.manifest
    loaded = load_spec(workspace.resolve(manifest.spec, what="spec"), workspace)
    return prepare(loaded, manifest.variant, manifest.target, manifest.shape_index)


def session_folder(name: str, workspace: Workspace) -> tuple[str, Path]:
    """A bare name lives under .hyperloom/tune/; anything with a slash is a folder in the workspace."""
    if "/" in name:
        folder = workspace.resolve(name, must_exist=False, kind="dir", what="session")
        return folder.name, folder
    if not _NAME.fullmatch(name):
        raise HyperloomError(f"{name[:60]!r} is not a session name", "use letters, digits, '.', '_' and '-' (up to 120), or a folder path")
    # followed through any symlink: a session folder (or .hyperloom itself) linked outside the workspace is refused
    return name, workspace.check(workspace.state_dir(SESSIONS_DIR.name) / name, must_exist=False, kind="dir", what=f"session {name!r}")


def _spec_identity(request: TuneRequest, launchable: Launchable, others: dict[str, Launchable]) -> dict[str, Any]:
    identity = {
        "spec_sha256": sha256_file(launchable.loaded.path),
        "source_sha256": _source_sha256(launchable),
        "variant": launchable.variant_name,
        "target": request.target,
        "shape": launchable.shape,
    }
    if others:  # only sessions searching several variants carry these (older sessions' identities stay as they were)
        identity["variant_sources_sha256"] = {name: _source_sha256(other) for name, other in others.items()}
    return identity


def _source_sha256(launchable: Launchable) -> str:
    source, _ = launchable.loaded.source_of(launchable.variant)
    return sha256_file(source)


def candidate_digest(manifest: Manifest, params: Params) -> str:
    """A candidate's content hash: the session's identity, its variant and its merged defines. The loop and
    tune_propose both use it, so a proposal is recognised as the trial it repeats."""
    searched = manifest.variant_defines or {}
    variant, defines = split_variant(params, manifest.variant, searched)
    if variant == manifest.variant:
        return candidate_hash(manifest.identity_sha256, {**manifest.baseline_defines, **defines})
    return candidate_hash(manifest.identity_sha256, {**searched[variant], **defines, VARIANT: variant})


WARM_START = "warm_start"  # the note (and the trials' proposer) of candidates queued from TuneRequest.warm_start


def queue_candidate(manifest: Manifest, ledger: Ledger, params: Params, note: str) -> ProposeResult:
    """Queue a candidate for the loop (tune_propose, warm_start) unless it is recorded or queued already."""
    digest = candidate_digest(manifest, params)
    earlier = next((t for t in ledger.trials() if t.hash == digest), None)
    if earlier is not None:
        return ProposeResult(accepted=False, hash=digest,
                             summary=f"already recorded as #{earlier.seq}: {earlier.status} {earlier.reason or ''}".strip())
    if ledger.queued(digest):
        return ProposeResult(accepted=False, hash=digest, summary="already queued")
    ledger.propose(digest, params, note)
    return ProposeResult(accepted=True, hash=digest, summary="queued")


def _others(loaded: LoadedSpec, request: TuneRequest, launchable: Launchable) -> dict[str, Launchable]:
    """The further variants' launchables, each checked as the own one is (it builds for the target; its geometry keeps the problem)."""
    others = {}
    for name in dict.fromkeys(request.search_variants):
        if name != launchable.variant_name:
            others[name] = prepare(loaded, name, request.target, request.shape)
    for each in (launchable, *others.values()):
        for define, values in loaded.spec.tuning_of(each.variant).items():  # a geometry that changes the problem fails now, not per trial
            if define in each.shape:
                for value in values:
                    specialize(each, {define: value})
    return others


def open_session(request: TuneRequest, workspace: Workspace, prepared: Callable[[Launchable], None] | None = None) -> tuple[Session, bool]:
    """Create the session folder, or reopen it after checking it; returns (session, resumed). `prepared` is called
    with the session's launchable as soon as it is known, before inputs are staged and references frozen (the loop
    starts its warm workers there, so they are up when the first candidate is)."""
    loaded = load_spec(workspace.resolve(request.spec, what="spec"), workspace)
    launchable = prepare(loaded, request.variant, request.target, request.shape)
    others = _others(loaded, request, launchable)
    if prepared is not None:
        prepared(launchable)
    name = (request.session
            or f"{loaded.spec.name}-{launchable.variant_name}-{request.target}-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S%f}")
    session_id, folder = session_folder(name, workspace)
    if folder.exists() and any(folder.iterdir()):
        return _reopen(session_id, folder, request, launchable, others), True
    if folder.exists():
        folder.rmdir()  # an empty folder the caller made for us
    identity = _spec_identity(request, launchable, others)
    with staged_directory(folder) as staging:
        input_sets = {}
        for input_set in launchable.input_sets:
            refs = stage_input_set(launchable, input_set, staging / "inputs" / input_set)
            frozen = freeze(
                FreezeRequest(
                    out=workspace.relative(staging / "references" / input_set),
                    references=[workspace.relative(r) for r in refs],
                    inputs=[workspace.relative(p) for p in sorted((staging / "inputs" / input_set).glob("in_*.npy"))],
                    **loaded.spec.tolerance.model_dump(),
                ),
                workspace,
            )
            for ref in refs:
                ref.unlink()  # the frozen copy is the one the gate reads
            input_sets[input_set] = frozen.manifest_sha256
        manifest = Manifest(
            session=session_id, created_at=dt.datetime.now(dt.timezone.utc).isoformat(), spec=workspace.relative(loaded.path),
            spec_name=loaded.spec.name, **identity, shape_index=request.shape, tolerance=loaded.spec.tolerance.model_dump(),
            tuning=loaded.spec.tuning_of(launchable.variant), baseline_defines=launchable.variant.model_dump(mode="json")["defines"],
            variant_tuning={n: loaded.spec.tuning_of(o.variant) for n, o in others.items()} if others else None,
            variant_defines={n: o.variant.model_dump(mode="json")["defines"] for n, o in others.items()} if others else None,
            request=request.model_dump(), input_sets=input_sets,
            input_set_sha256=combine_digests(input_sets[s] for s in sorted(input_sets)),
            environment={"hyperloom": __version__, "python": platform.python_version(), "device": host_device(),
                         "platform": platform.platform()},
        )
        manifest.identity_sha256 = manifest.identity()
        Ledger(staging / LEDGER, session_id, create=True).close()
        manifest.write(staging)
    return Session(session_id, folder, manifest, Ledger(folder / LEDGER, session_id, create=False), launchable=launchable,
                   others=others), False


def _reopen(session_id: str, folder: Path, request: TuneRequest, launchable: Launchable, others: dict[str, Launchable]) -> Session:
    manifest = read_manifest(folder)
    if manifest.session != session_id:
        raise HyperloomError(f"{folder} holds session {manifest.session!r}, not {session_id!r}",
                             "it was copied or renamed; open it under its own name")
    identity = _spec_identity(request, launchable, others)
    changed = [key for key, value in identity.items() if getattr(manifest, key) != value]
    # older sessions lack newer fields
    recorded = {key: manifest.request.get(key, TuneRequest.model_fields[key].get_default(call_default_factory=True)) for key in IDENTITY}
    changed += [key for key in IDENTITY if key not in ("spec",) and recorded[key] != getattr(request, key)]
    if changed:
        raise HyperloomError(
            f"session {session_id!r} was started with a different {', '.join(changed)} (the spec, its source or the request changed)",
            "resume it with the same spec and request, or start a new session",
        )
    for input_set, digest in manifest.input_sets.items():
        frozen = folder / "references" / input_set / "manifest.json"
        if not frozen.is_file() or json.loads(frozen.read_text()).get("content_sha256") != digest:
            raise HyperloomError(f"the frozen references of {input_set!r} in {folder} changed or are missing",
                                 "the session is corrupt; start a new session")
    return Session(session_id, folder, manifest, Ledger(folder / LEDGER, session_id, create=False), launchable=launchable, others=others)


def open_existing(name: str, workspace: Workspace) -> StoredSession:
    """For status, propose, stop and report: a session that must already exist (close it, or open it in a `with`)."""
    _, folder = session_folder(name, workspace)
    if not folder.is_dir():
        raise HyperloomError(f"no tune session {name!r} (looked in {folder})", "start one with tune start (action start over MCP)")
    manifest = read_manifest(folder)
    return StoredSession(manifest.session, folder, manifest, Ledger(folder / LEDGER, manifest.session, create=False))


def scratch(session: Session, digest: str) -> Path:
    folder = session.folder / "scratch" / digest[:16]
    shutil.rmtree(folder, ignore_errors=True)
    return folder
