"""What a campaign's novelty ledger keys a measurement by, and how a candidate goes on a stack: shared by the campaign
and optimize_propose, which refuses a proposal measured already before it is queued."""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file, sha256_json
from hyperloom.core.workspace import Workspace


def identity(name: str, workspace: Workspace) -> str:
    """A lever as novelty sees it: a lever naming a file (overrides:PATH.py) with the file's content hashed."""
    kind, colon, path = name.partition(":")
    if colon and path.endswith(".py") and kind != "knob":
        try:
            return f"{name}@{sha256_file(workspace.resolve(path, kind='file', what='lever file'))[:16]}"
        except HyperloomError:
            return name
    return name


def measurement_key(kind: str, reference: list[str], levers: list[str], point: dict[str, str] | None, workspace: Workspace) -> str:
    """What novelty is judged by: the kind of measurement, its reference and its levers (as sets, files hashed), its point."""
    return sha256_json([kind, sorted(identity(n, workspace) for n in reference), sorted(identity(n, workspace) for n in levers),
                        point])[:24]


def stacked(stack: list[str], levers: list[str]) -> list[str]:
    return [*stack, *(name for name in levers if name not in stack)]


def conflict(stack: list[str], levers: list[str]) -> str | None:
    """Why `levers` cannot go on `stack`: a knob the stack sets to another value (check_candidate finds the rest)."""
    knobs = {name.split("=", 1)[0]: name for name in stack if name.startswith("knob:")}
    for name in levers:
        other = knobs.get(name.split("=", 1)[0]) if name.startswith("knob:") else None
        if other is not None and other != name:
            return f"{name} sets the knob {other} already sets"
    return None


def point_of(raw: object, declared: dict[str, list[str] | None]) -> dict[str, str] | None:
    """A sweep point as the workload declared it (a dict of its knobs and their values, as text), or None if it is not one."""
    if not isinstance(raw, dict) or not raw or any(str(k) not in declared for k in raw):
        return None
    return {str(k): str(v) for k, v in raw.items()}
