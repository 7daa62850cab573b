"""Frozen reference sets: reference outputs, their declared tolerance, and the sha256 of everything.

A set is a folder holding `manifest.json` and one `.npy` per case. The gate refuses a set whose
files or manifest changed after freezing.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.atomic import staged_directory
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.models import FreezeRequest, FreezeResult, Tolerance
from hyperloom.tools.gate.sources import NpyFile
from hyperloom.validators.schemas import require_valid

MANIFEST = "manifest.json"
FORMAT = "hyperloom.reference_set/1"
REFREEZE = "freeze the set again from the original outputs with `hyperloom gate freeze --overwrite`, or restore the original files"


@dataclass(frozen=True)
class FrozenSet:
    folder: Path
    tolerance: Tolerance
    case_names: list[str]
    reference_paths: list[Path]
    reference_sha256: dict[Path, str]  # verified just now: the gate need not hash them again


def freeze(request: FreezeRequest, workspace: Workspace) -> FreezeResult:
    """Copy the references into a new set folder and write its manifest, all or nothing."""
    out = workspace.resolve(request.out, must_exist=False, kind="dir", what="out")
    if out.exists() and not request.overwrite:
        raise HyperloomError(f"{request.out!r} already exists", "choose another --out folder, or pass overwrite to replace it")
    if out.exists() and not (out / MANIFEST).is_file():
        raise HyperloomError(
            f"{request.out!r} exists and is not a reference set, so it is not overwritten",
            "choose another --out folder",
        )
    names = request.case_names or [f"case{i}" for i in range(len(request.references))]
    if len(names) != len(request.references) or len(set(names)) != len(names):
        raise HyperloomError(
            f"{len(names)} case names for {len(request.references)} references (names must be unique)",
            "give one unique name per reference, or none",
        )
    sources = [NpyFile.open(workspace.resolve(ref, suffix=".npy", kind="file", what="reference"), f"reference {ref!r}")
               for ref in request.references]
    inputs = [{"path": raw, "sha256": sha256_file(workspace.resolve(raw, kind="file", what="input"))} for raw in request.inputs]
    tolerance = Tolerance(atol=request.atol, rtol=request.rtol, max_ulp=request.max_ulp, nan_policy=request.nan_policy)

    with staged_directory(out) as staging:
        cases = []
        for index, (name, source) in enumerate(zip(names, sources, strict=True)):
            file_name = f"ref_{index:03d}.npy"
            shutil.copyfile(source.path, staging / file_name)
            cases.append(
                {
                    "name": name,
                    "file": file_name,
                    "sha256": sha256_file(staging / file_name),
                    "dtype": source.dtype.str,
                    "shape": list(source.shape),
                }
            )
        evidence = measured(
            "gate.freeze",
            inputs_sha256=combine_digests(
                [c["sha256"] for c in cases] + [i["sha256"] for i in inputs] + [sha256_json(tolerance.model_dump())]
            ),
        )
        manifest = {
            "format": FORMAT,
            "created_at": evidence.at.isoformat(),
            "tolerance": tolerance.model_dump(),
            "cases": cases,
            "inputs": inputs,
            "evidence": evidence.model_dump(mode="json"),
        }
        manifest["content_sha256"] = sha256_json(manifest)
        (staging / MANIFEST).write_bytes(json.dumps(manifest, indent=2).encode() + b"\n")
    return FreezeResult(
        reference_set=workspace.relative(out),
        manifest_sha256=manifest["content_sha256"],
        cases=names,
        tolerance=tolerance,
        evidence=evidence,
    )


FileStamp = tuple[int, int, int, int]
_VERIFIED: OrderedDict[Path, tuple[dict[Path, FileStamp], FrozenSet]] = OrderedDict()
_VERIFIED_LOCK = threading.Lock()
VERIFIED_SETS = 64
RACY_NS = 50_000_000
"""A file changed this shortly before its verification began is verified again next time: a file system's clock
ticks coarsely, so a write right after the verification could leave the same change time (git's "racy" entries)."""


def load_reference_set(folder: Path, workspace: Workspace) -> FrozenSet:
    """Read a set and prove it unchanged since freezing; any difference is an error.

    A set this process verified is not hashed again while its manifest and every reference file keep the
    stamp (inode, size, modification and change times) they had when verified: a write changes the change
    time, which no caller can set back. A tune session gates every candidate against the same sets."""
    key = folder.resolve()
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(key)
    if known is not None and _stamps(list(known[0])) == known[0]:
        return known[1]
    started_ns = time.time_ns()
    before = _stamps([key / MANIFEST, *sorted(key.glob("*.npy"))])
    frozen = _verify(folder, workspace)
    stamps = _stamps([key / MANIFEST, *(key / p.name for p in frozen.reference_paths)])
    if (stamps is not None and before is not None and all(before.get(f) == stamp for f, stamp in stamps.items())  # unchanged while read
            # and changed well before: a write in the same clock tick shows
            and all(stamp[3] < started_ns - RACY_NS for stamp in stamps.values())):
        with _VERIFIED_LOCK:
            _VERIFIED[key] = (stamps, frozen)
            while len(_VERIFIED) > VERIFIED_SETS:
                _VERIFIED.popitem(last=False)
    return frozen


def _stamps(paths: list[Path]) -> dict[Path, FileStamp] | None:
    """Each file's (inode, size, mtime_ns, ctime_ns); None when one cannot be read."""
    try:
        return {p: (s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for p, s in ((p, os.stat(p)) for p in paths)}
    except OSError:
        return None


def _verify(folder: Path, workspace: Workspace) -> FrozenSet:
    label = f"reference set {workspace.relative(folder)!r}"
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise HyperloomError(f"{label} has no {MANIFEST}", "pass a folder written by `hyperloom gate freeze`")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyperloomError(f"{label}: {MANIFEST} is not valid JSON ({exc})", REFREEZE) from exc
    require_valid("reference_set", manifest, label, REFREEZE)
    claimed = manifest.pop("content_sha256")
    if sha256_json(manifest) != claimed:
        raise HyperloomError(f"{label}: {MANIFEST} was edited after freezing (its content hash no longer matches)", REFREEZE)
    paths = []
    for case in manifest["cases"]:
        path = folder / case["file"]
        if not path.is_file():
            raise HyperloomError(f"{label}: reference file {case['file']} is missing", REFREEZE)
        actual = sha256_file(path)
        if actual != case["sha256"]:
            raise HyperloomError(
                f"{label}: {case['file']} (case {case['name']!r}) has sha256 {actual[:16]}…, "
                f"but the manifest froze {case['sha256'][:16]}…; the reference was changed after freezing",
                REFREEZE,
            )
        paths.append(path)
    return FrozenSet(
        folder=folder,
        tolerance=Tolerance(**manifest["tolerance"]),
        case_names=[case["name"] for case in manifest["cases"]],
        reference_paths=paths,
        reference_sha256={path: case["sha256"] for path, case in zip(paths, manifest["cases"], strict=True)},
    )

