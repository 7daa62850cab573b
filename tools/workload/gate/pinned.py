"""The workload pinned at freeze: the digest of the file its factory (or script) lives in, so a bench, an integrate or
a campaign over a workload changed since is refused with both digests (an edit that slows only the baseline would
otherwise read as a candidate's gain)."""

from __future__ import annotations

from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file
from hyperloom.core.workspace import Workspace


def pin(module_file: str | None, workspace: Workspace) -> dict[str, str]:
    """{path: sha256} of the workload's source file (a path inside the workspace relative to it), empty when unknown."""
    if not module_file or not Path(module_file).is_file():
        return {}
    path = Path(module_file).resolve()
    try:
        shown = str(path.relative_to(workspace.root))
    except ValueError:
        shown = str(path)
    return {shown: sha256_file(path)}


def check(pinned: dict[str, str], workspace: Workspace, session: str) -> None:
    """Refuse a workload whose pinned source changed or went missing since freeze, naming both digests."""
    for shown, digest in pinned.items():
        path = Path(shown) if Path(shown).is_absolute() else workspace.root / shown
        now = sha256_file(path) if path.is_file() else "missing"
        if now != digest:
            raise HyperloomError(f"the workload's source {shown} changed since session {session!r} was frozen (sha256 {digest[:16]} at "
                                 f"freeze, {now[:16]} now)",
                                 "restore the file, or freeze the workload again (overwrite) so the baseline and its outputs are the "
                                 "changed code's")
