"""A campaign's folder, .hyperloom/optimize/NAME/: manifest.json (the workload and its baseline knobs, written once),
ledger.sqlite, runs/ (the workers' folders, removed at close), report.md, breakdown.json, campaign.png.

The workload is frozen as the workload session of the same NAME (tools/workload/gate/frozen.py) before anything is
timed (exact outputs: its baseline must reproduce itself bit for bit), or taken from it when it is frozen already
(freeze it first with workload freeze to declare a tolerance). A workload
without outputs is refused: nothing could be kept honestly. Reopening checks that it is the same workload.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.ledger import Ledger
from hyperloom.tools.optimize.models import OptimizeRequest
from hyperloom.tools.workload.freeze import describe_target, freeze_workload
from hyperloom.tools.workload.gate.frozen import Frozen, located, portable, read_frozen
from hyperloom.tools.workload.levers import check_candidate
from hyperloom.tools.workload.gate.frozen import session_folder as workload_folder
from hyperloom.tools.workload.models import WorkloadFreezeRequest

FORMAT = "hyperloom.optimize/1"
PASS_FORMAT = "hyperloom.optimize.pass/1"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
LEDGER, MANIFEST, PASS = "ledger.sqlite", "manifest.json", "pass.json"


@dataclass
class Session:
    """A campaign folder opened: its name, folder, frozen workload and ledger (closed with the session)."""

    name: str
    folder: Path
    frozen: Frozen
    ledger: Ledger

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def folder_of(name: str, workspace: Workspace) -> Path:
    if not NAME.match(name) or ".." in name:
        raise HyperloomError(f"optimize session name {name[:80]!r} is not a plain name", "use letters, digits, '_', '-' and '.' (up to 80)")
    return workspace.check(workspace.state_dir("optimize") / name, must_exist=False, kind="dir", what=f"optimize session {name!r}")


def default_name(workload: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", workload.rsplit("/", 1)[-1]).lstrip("._-")[:80] or "workload"


def open_campaign(request: OptimizeRequest, workspace: Workspace) -> Session:
    """Create the campaign (freezing the workload first if it is not frozen) or reopen it after checking it."""
    name = request.session or default_name(request.workload or "")
    folder = folder_of(name, workspace)
    if (folder / PASS).is_file():
        raise HyperloomError(f"{name!r} is a pass over several workloads",
                             "start it again with the same workloads, or name one of its sessions (NAME.N)")
    frozen, freeze_s = _frozen(request, name, workspace)
    for lever in request.levers or []:  # each applies here and names a knob the workload declares: refused before the session is made
        check_candidate([lever], frozen.vendor, frozen.declared_knobs)
    if not frozen.gated:
        raise HyperloomError(f"the workload {frozen.target.workload} has no outputs() to gate: nothing could be kept honestly",
                             "give its factory an outputs() returning the tensors a faster run must reproduce (see the skill's "
                             "workload page)")
    manifest = folder / MANIFEST
    if manifest.is_file():
        stored = json.loads(manifest.read_text())
        if (stored.get("format") != FORMAT or located(stored.get("workload") or "", workspace) != frozen.target.workload
                or stored.get("frozen_sha256") != frozen.manifest_sha256):
            raise HyperloomError(f"optimize session {name!r} was started on another workload or another freeze of it",
                                 "resume it with the same workload, or start a new session under another name")
        return Session(name, folder, frozen, Ledger(folder / LEDGER, name, create=False))
    folder.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(folder / LEDGER, name, create=True)
    if freeze_s:  # frozen here, not before by workload freeze
        ledger.add_spent(freeze_s, "freeze")
    write_bytes_atomic(manifest, json.dumps({"format": FORMAT, "session": name, "workload": portable(frozen.target.workload, workspace),
                                             "knobs": frozen.target.knobs, "frozen_sha256": frozen.manifest_sha256,
                                             "created_at": dt.datetime.now(dt.timezone.utc).isoformat()},
                                            indent=2).encode() + b"\n")
    return Session(name, folder, frozen, ledger)


def open_existing(name: str, workspace: Workspace) -> Session:
    """For status, propose, stop and report: a campaign that exists."""
    folder = folder_of(name, workspace)
    if not (folder / MANIFEST).is_file():
        raise HyperloomError(f"no optimize session {name!r}", "start one with optimize start (action start over MCP)")
    return Session(name, folder, read_frozen(name, workspace), Ledger(folder / LEDGER, name, create=False))


def _frozen(request: OptimizeRequest, name: str, workspace: Workspace) -> tuple[Frozen, float]:
    """The frozen workload NAME, read back or frozen now, and the seconds freezing took (its two baseline runs)."""
    if (workload_folder(name, workspace) / "workload.json").is_file():
        frozen = read_frozen(name, workspace)
        if request.workload is not None:
            wanted = describe_target(request.workload, [], request.knobs, workspace)
            if (wanted.workload, wanted.knobs) != (frozen.target.workload, frozen.target.knobs):
                raise HyperloomError(f"workload {name!r} is frozen as {frozen.target.workload} with knobs "
                                     f"{frozen.target.knobs}, not as asked",
                                     "omit workload and knobs to optimize the frozen one, or pick another session name")
        return frozen, 0.0
    if request.workload is None:
        raise HyperloomError(f"no frozen workload {name!r} to optimize", "pass workload (module:function or file.py:function)")
    started = time.perf_counter()
    freeze_workload(WorkloadFreezeRequest(workload=request.workload, name=name, knobs=request.knobs, k=request.k,
                                          timeout_s=request.timeout_s), workspace)
    return read_frozen(name, workspace), time.perf_counter() - started


def write_pass(folder: Path, members: list[str], workloads: list[str], errors: dict[str, str], ray: str | None = None) -> None:
    """pass.json: a pass's member sessions, its workloads, where they ran (the Ray address, or null: in turn here) and
    why a member could not be opened or finished."""
    write_bytes_atomic(folder / PASS,
                       json.dumps({"format": PASS_FORMAT, "members": members, "workloads": workloads, "ray": ray, "errors": errors},
                                                 indent=2).encode() + b"\n")


def read_pass(folder: Path) -> dict | None:
    path = folder / PASS
    return json.loads(path.read_text()) if path.is_file() else None

