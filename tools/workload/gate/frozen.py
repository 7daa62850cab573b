"""A frozen workload: its baseline outputs as gate reference sets (one per output, each with its own tolerance, hashed
and refused when changed), and `workload.json`, which says how to build the baseline again.

Layout under the workspace: .hyperloom/workload/NAME/{workload.json, frozen/OUTPUT/ (a reference set), runs/...}.
Floating outputs are judged by the gate (|c - r| <= atol + rtol |r|, NaN forbidden); integer outputs (token ids)
by the share of equal elements, at least the declared `match`; generated tokens that come with their top-k
log-probabilities (`NAME.top_ids`, `NAME.top_logprobs`) by the near-tie gate of generated.py. An output whose
tolerance was derived from the model's float32 twin is judged by the twin rule (twin.py) against the twin's output,
frozen beside it as the reference set NAME.twin (against a live baseline's output where no twin is at hand).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.freeze import freeze, load_reference_set
from hyperloom.tools.gate.models import FreezeRequest, Tolerance
from hyperloom.tools.gate.outputs import judge_arrays
from hyperloom.tools.workload.gate import generated, pinned, twin
from hyperloom.tools.workload.models import OutputCheck, OutputTolerance
from hyperloom.tools.workload.process import Target

FORMAT = "hyperloom.workload/1"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
MISMATCHES_SHOWN = 3


def session_folder(name: str, workspace: Workspace) -> Path:
    if not NAME.match(name) or ".." in name:
        raise HyperloomError(f"workload session name {name[:80]!r} is not a plain name", "use letters, digits, '_', '-' and '.'")
    return workspace.resolve(f".hyperloom/workload/{name}", must_exist=False, kind="dir", what="workload session")


@dataclass(frozen=True)
class Frozen:
    """A frozen session as read back: the target to rebuild, the outputs' tolerances, the reference sets' folders."""

    folder: Path
    target: Target
    tolerances: dict[str, OutputTolerance]
    declared_knobs: dict[str, list[str] | None]
    vendor: str
    manifest_sha256: str
    twins: tuple[str, ...] = ()  # reference sets of the twin's outputs (NAME.twin), beside the outputs' own

    @property
    def gated(self) -> bool:
        return bool(self.tolerances)

    def looser_twin_rule(self) -> bool:
        """Whether the user declared, for some output, a twin rule looser than the default (k above it: how many times
        the model's own error against its float32 twin they accept): what a lossy lever (a quantization) needs to be
        tried by optimize unasked. An atol/rtol says nothing of the model's own error, so it does not count."""
        return any(t.derived is not None and t.derived.k > twin.DEFAULT_K for t in self.tolerances.values())


def write_frozen(folder: Path, run: Path, target: Target, tolerances: dict[str, OutputTolerance],
                 declared_knobs: dict[str, list[str] | None], vendor: str, workspace: Workspace, twins: dict[str, Path] | None = None,
                 pinned: dict[str, str] | None = None) -> dict[str, str]:
    """Freeze the outputs saved in `run` (one .npy per output) as reference sets beside workload.json, and each twin
    output in `twins` (NAME.twin -> its .npy); `pinned`: the workload's source files' digests; returns each set's
    manifest digest."""
    digests = {}
    frozen = folder / "frozen"
    if frozen.exists():
        shutil.rmtree(frozen)
    sources = {name: (run / f"{name}.npy", tolerance.atol, tolerance.rtol) for name, tolerance in tolerances.items()}
    sources.update({name: (path, 0.0, 0.0) for name, path in (twins or {}).items()})
    for name, (path, atol, rtol) in sources.items():
        result = freeze(FreezeRequest(out=workspace.relative(frozen / name), references=[workspace.relative(path)], atol=atol, rtol=rtol,
                                      case_names=[name]), workspace)
        digests[name] = result.manifest_sha256
    manifest = {"format": FORMAT, "workload": portable(target.workload, workspace), "kind": target.kind, "args": list(target.args),
                "knobs": target.knobs, "declared_knobs": declared_knobs, "vendor": vendor,
                "outputs": {n: t.model_dump() for n, t in tolerances.items()}, "sets": digests, "twins": sorted(twins or {}),
                "pinned": pinned or {}}
    manifest["content_sha256"] = sha256_json(manifest)
    write_bytes_atomic(folder / "workload.json", json.dumps(manifest, indent=2).encode() + b"\n")
    return digests


def portable(workload: str, workspace: Workspace) -> str:
    """A workload as a manifest stores it: a file inside the workspace by its path relative to the root, so a frozen
    session and its campaign resume where the workspace is moved or copied (a campaign's state carried to another
    machine); a module's function as given."""
    root = f"{workspace.root}/"
    return workload.removeprefix(root) if workload.startswith(root) else workload


def located(workload: str, workspace: Workspace) -> str:
    """A stored workload as a worker loads it: a relative file path (script.py, file.py:function) under the root,
    refused where it would lead outside the workspace (an edited manifest's ../file.py)."""
    where = workload.rpartition(":")[0] if ":" in workload and not workload.endswith(".py") else workload
    if where.endswith(".py") and not where.startswith("/"):
        return f"{workspace.resolve(where, must_exist=False, kind='file', what='frozen workload')}{workload.removeprefix(where)}"
    return workload


def read_frozen(name: str, workspace: Workspace) -> Frozen:
    folder = session_folder(name, workspace)
    path = folder / "workload.json"
    if not path.is_file():
        raise HyperloomError(f"no frozen workload {name!r} (looked in {workspace.relative(folder)})",
                             "freeze it first with workload freeze")
    try:
        manifest = json.loads(path.read_text())
        stored = manifest.pop("content_sha256")
    except (ValueError, KeyError, AttributeError) as exc:
        raise HyperloomError(f"{workspace.relative(path)} is not a workload manifest", "freeze the workload again (overwrite)") from exc
    if manifest.get("format") != FORMAT or sha256_json(manifest) != stored:
        raise HyperloomError(f"{workspace.relative(path)} changed after it was frozen",
                             "freeze the workload again (overwrite), or restore the file")
    pinned.check(manifest.get("pinned") or {}, workspace, name)
    twins = tuple(manifest.get("twins", []))
    for output in (*manifest["outputs"], *twins):
        load_reference_set(folder / "frozen" / output, workspace)  # refuses a set whose files changed
    target = Target(located(manifest["workload"], workspace), manifest["kind"], tuple(manifest["args"]), dict(manifest["knobs"]))
    tolerances = {n: OutputTolerance(**t) for n, t in manifest["outputs"].items()}
    return Frozen(folder, target, tolerances, manifest["declared_knobs"], manifest["vendor"], stored, twins)


def reference(frozen: Frozen, output: str) -> np.ndarray:
    return np.load(next((frozen.folder / "frozen" / output).glob("ref_*.npy")), allow_pickle=False)


def references(frozen: Frozen) -> dict[str, np.ndarray]:
    """Every frozen reference a candidate is judged against: the outputs' own and their twins'."""
    return {name: reference(frozen, name) for name in (*frozen.tolerances, *frozen.twins)}


def compare(candidate: Path, references: dict[str, np.ndarray], tolerances: dict[str, OutputTolerance]) -> list[OutputCheck]:
    """Each output saved in `candidate` against its reference: shape, dtype kind, then the tolerance (a derived one by
    the twin rule against NAME.twin when the references hold it); generated tokens that come with their top-k
    log-probabilities, by the near-tie gate (generated.py)."""
    checks = []
    paired = generated.companions(references)
    companions = generated.grouped(paired) - set(paired)
    for name, ref in references.items():
        if name in companions or twin.is_twin(name):
            continue  # judged with its tokens, or the twin of another output
        names = (name, *paired[name]) if name in paired else (name,)
        missing = [n for n in names if not (candidate / f"{n}.npy").is_file()]
        if missing:
            checks.extend(OutputCheck(output=n, passed=False, detail="the candidate's outputs() did not return it") for n in missing)
            continue
        outs = [np.load(candidate / f"{n}.npy", allow_pickle=False) for n in names]
        if name in paired:
            checks.extend(generated.check(name, generated.Generated(*outs), generated.Generated(*(references[n] for n in names)),
                                          tolerances[paired[name][1]]))
        elif tolerances[name].derived is not None:
            derived, twin_ref = tolerances[name].derived, references.get(twin.twin_name(name))
            checks.append(twin.check(name, outs[0], twin_ref, derived) if twin_ref is not None
                          else twin.check_live(name, outs[0], ref, derived))
        else:
            checks.append(_check(name, outs[0], ref, tolerances[name]))
    return checks


def spread(a: np.ndarray, b: np.ndarray, tolerance: OutputTolerance) -> float:
    """How far two runs of the baseline are apart, in units of the tolerance (<= 1 fits) for floats; for integers the
    share of unequal elements."""
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return float("inf")
    if a.dtype.kind in "iu":
        return float(np.mean(a != b)) if a.size else 0.0
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    diff = np.abs(a64 - b64)
    allowed = tolerance.atol + tolerance.rtol * np.abs(b64)
    both_nan = np.isnan(a64) & np.isnan(b64)
    if np.any(np.isnan(diff) & ~both_nan):
        return float("inf")
    excess = np.where(both_nan, 0.0, np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1), np.where(diff > 0, np.inf, 0.0)))
    return float(excess.max()) if excess.size else 0.0


def _check(name: str, out: np.ndarray, ref: np.ndarray, tolerance: OutputTolerance) -> OutputCheck:
    if out.shape != ref.shape:
        return OutputCheck(output=name, passed=False, detail=f"shape {list(out.shape)}, the frozen baseline's {list(ref.shape)}")
    if (out.dtype.kind in "iu") != (ref.dtype.kind in "iu"):
        return OutputCheck(output=name, passed=False, detail=f"dtype {out.dtype}, the frozen baseline's {ref.dtype}")
    if ref.dtype.kind in "iu":
        equal = float(np.mean(out == ref)) if ref.size else 1.0
        first = np.argwhere(out != ref)[:MISMATCHES_SHOWN]
        where = ("; first unequal at " + ", ".join(f"{list(map(int, i))}: {out[tuple(i)]} vs {ref[tuple(i)]}" for i in first) if len(first)
                 else "")
        passed = equal >= tolerance.match
        return OutputCheck(output=name, passed=passed, detail=f"{equal:.4f} of elements equal (needs {tolerance.match:g}){where}")
    verdict = judge_arrays({name: out}, {name: ref}, Tolerance(atol=tolerance.atol, rtol=tolerance.rtol), {name: name})
    case = verdict.cases[0]
    detail = verdict.summary
    if not verdict.passed and case.first_mismatches:
        detail += "; first: " + ", ".join(f"{m.index}: {m.candidate} vs {m.reference}" for m in case.first_mismatches[:MISMATCHES_SHOWN])
    return OutputCheck(output=name, passed=verdict.passed, detail=detail)
