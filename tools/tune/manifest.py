"""manifest.json: what makes a tune session what it is, written once when it starts and checked on every open."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_json

SESSION_KIND = "hyperloom.tune.session"
SESSION_VERSION = 1
MANIFEST = "manifest.json"
IDENTITY_KEYS = ("spec_sha256", "source_sha256", "variant", "target", "shape", "input_set_sha256")
"""The fields identity_sha256 hashes (variant_sources_sha256 too, in sessions that search several variants)."""


class Manifest(BaseModel):
    """A session's manifest, field for field as manifest.json holds it (fields in the file's order)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = SESSION_KIND
    format_version: int = SESSION_VERSION
    session: str
    created_at: str
    spec: str = Field(description="The spec, relative to the workspace.")
    spec_name: str
    spec_sha256: str
    source_sha256: str
    variant: str = Field(description="The session's own variant: the baseline's.")
    target: str
    shape: dict[str, int]
    variant_sources_sha256: dict[str, str] | None = Field(None, description="Further variants searched: each one's source.")
    shape_index: int
    tolerance: dict[str, Any] = Field(description="Declared before the first trial.")
    tuning: dict[str, list[Any]]
    baseline_defines: dict[str, Any]
    variant_tuning: dict[str, dict[str, list[Any]]] | None = None
    variant_defines: dict[str, dict[str, Any]] | None = None
    request: dict[str, Any] = Field(description="The request that started the session.")
    input_sets: dict[str, str] = Field(description="Each input set's frozen manifest digest.")
    input_set_sha256: str
    environment: dict[str, Any]
    identity_sha256: str = ""

    def identity(self) -> str:
        """The digest of what the session's candidates are measured against (identity_sha256 once written)."""
        keys = IDENTITY_KEYS + (("variant_sources_sha256",) if self.variant_sources_sha256 is not None else ())
        return sha256_json({k: getattr(self, k) for k in keys})

    def dumps(self) -> bytes:
        return json.dumps(self.model_dump(exclude_none=True), indent=2).encode() + b"\n"

    def write(self, folder: Path) -> None:
        write_bytes_atomic(folder / MANIFEST, self.dumps())


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a session folder, or a clear error for anything that is not one."""
    path = folder / MANIFEST
    if not path.is_file():
        raise HyperloomError(f"{folder} is not empty and holds no {MANIFEST}: it is not a tune session",
                             "choose another session name; Hyperloom does not reuse or clear foreign folders")
    try:
        raw = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyperloomError(f"{path} is corrupt ({exc})", "move the session folder aside and start a new session") from exc
    if not isinstance(raw, dict) or raw.get("kind") != SESSION_KIND:
        raise HyperloomError(f"{path} is not a tune session manifest (kind {raw.get('kind') if isinstance(raw, dict) else None!r})",
                             "choose another session name")
    if raw.get("format_version") != SESSION_VERSION:
        raise HyperloomError(f"{folder} was written by session format {raw.get('format_version')}, this is {SESSION_VERSION}",
                             "finish it with the Hyperloom that started it, or start a new session")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise HyperloomError(f"{path} does not hold a complete tune manifest ({exc.error_count()} field(s) wrong, e.g. "
                             f"{exc.errors()[0]['loc']})",
                             "move the session folder aside and start a new session") from exc
