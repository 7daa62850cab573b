"""Committed census files, results/isa/<target>.json: writing them, and the drift of a fresh census."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.isa.models import Census
from hyperloom.validators.schemas import require_valid

RESULTS_DIR = "results/isa"
SCHEMA = "isa_census"
SHOWN = 10
REGENERATE = "regenerate it with `hyperloom census --write-results`"


def document(census: Census) -> dict[str, Any]:
    return census.model_dump(mode="json")


def document_text(census: Census) -> str:
    """Indented JSON with one instruction per line, so a diff shows which instructions changed."""
    doc = document(census)
    instructions = doc.pop("instructions")
    head = json.dumps(doc, indent=2, ensure_ascii=False)
    rows = ",\n".join("    " + json.dumps(i, ensure_ascii=False) for i in instructions)
    return head[: -len("\n}")] + ',\n  "instructions": [\n' + rows + "\n  ]\n}\n"


def write_results(censuses: list[Census], folder: Path) -> list[Path]:
    written = []
    for census in censuses:  # the schema is checked where files are read back, and on every committed file in tests
        path = folder / f"{census.target}.json"
        write_bytes_atomic(path, document_text(census).encode())
        written.append(path)
    return written


def read_committed(path: Path) -> dict[str, Any]:
    try:
        committed = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyperloomError(f"{path} is not readable JSON ({exc})", REGENERATE) from exc
    require_valid(SCHEMA, committed, str(path), REGENERATE)
    return committed


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """What must stay equal between runs: everything but the time, the host and the binary's hash."""
    return {k: v for k, v in doc.items() if k != "evidence"} | {"llvm": {k: v for k, v in doc["llvm"].items() if k != "sha256"}}


@dataclass
class Drift:
    target: str
    differences: list[str] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return bool(self.differences)


def _names(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in doc["instructions"]}


def _listed(label: str, names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN]) + (f", … ({len(names)} in all)" if len(names) > SHOWN else "")
    return f"{label}: {shown}"


def drift(fresh: Census, committed: dict[str, Any]) -> Drift:
    """Differences between a fresh census and the committed file, in words."""
    new = document(fresh)
    result = Drift(fresh.target)
    if _comparable(new) == _comparable(committed):
        return result
    if new["llvm"]["version"] != committed["llvm"]["version"]:
        result.differences.append(
            f"LLVM version {committed['llvm']['version']} (committed) → {new['llvm']['version']} (now); the census depends on it"
        )
    before, after = _names(committed), _names(new)
    if added := sorted(set(after) - set(before)):
        result.differences.append(_listed("instructions added", added))
    if removed := sorted(set(before) - set(after)):
        result.differences.append(_listed("instructions removed", removed))
    if changed := sorted(n for n in set(before) & set(after) if before[n] != after[n]):
        result.differences.append(_listed("instructions whose kind, families or example changed", changed))
    caps_before = {c["name"]: c["present"] for c in committed["capabilities"]}
    caps_after = {c["name"]: c["present"] for c in new["capabilities"]}
    if moved := sorted(n for n in set(caps_before) | set(caps_after) if caps_before.get(n) != caps_after.get(n)):
        result.differences.append(_listed("capabilities changed", [f"{n} {caps_before.get(n)}→{caps_after.get(n)}" for n in moved]))
    if not result.differences:
        keys = sorted(k for k in _comparable(new) if _comparable(new)[k] != _comparable(committed).get(k))
        result.differences.append(_listed("fields changed", keys))
    return result
