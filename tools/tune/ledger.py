"""ledger.sqlite: one row per finished candidate, the external proposal queue and session state.

A row is written in one transaction when a candidate finishes, so a killed session holds every
finished trial and nothing half-done; the unique content hash keeps a candidate from running twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.triton.models import AutotuneChoice
from hyperloom.tools.tune.models import Revalidation, ShapeSweep, TrialRecord, TuneRequest

LEDGER_KIND = "hyperloom.tune.ledger"
LEDGER_VERSION = "1"
OWN_TUNER_CHOICE = "triton_autotune"  # the meta key of the kernel's own autotuner choice (named when Triton's was the only one)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE, record TEXT NOT NULL, spent_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS proposals (
  id INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL, params TEXT NOT NULL, note TEXT NOT NULL, taken INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS spent (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT NOT NULL, seconds REAL NOT NULL);
"""
_LINEAGE = "CREATE TABLE IF NOT EXISTS lineage (hash TEXT PRIMARY KEY, record TEXT NOT NULL)"  # added to older ledgers when they open


class Lineage(BaseModel):
    """Where a source change came from: its parent candidate, its stored source, and what the proposer said of it."""

    hash: str = Field(description="The candidate's hash (or not-new-<sha> for a change that built to a recorded code object).")
    parent: str
    source: str = Field(description="The stored source, relative to the workspace.")
    kind: Literal["source", "diff"]
    note: str = ""
    build_sha256: str | None = Field(None, description="Its code object and launch (None: it did not build).")
    same_as: str | None = Field(None, description="Not new: the candidate whose code object it builds to.")


class Ledger:
    """A thin, thread-safe wrapper over the session's SQLite file (WAL; every write its own transaction)."""

    def __init__(self, path: Path, session_id: str, *, create: bool) -> None:
        self.path = path
        if not create and not path.is_file():
            raise HyperloomError(f"{path} is missing", "the session folder is incomplete; start a new session under another name")
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            if create:
                self._db.executescript(_SCHEMA)
                with self._db:
                    self._db.executemany(
                        "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                        [("kind", LEDGER_KIND), ("version", LEDGER_VERSION), ("session", session_id)],
                    )
            self._db.execute(_LINEAGE)
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise HyperloomError(f"{path} is not a readable tune ledger ({exc})",
                                 "the session is corrupt; move it aside and start a new session") from exc
        if meta.get("kind") != LEDGER_KIND or meta.get("session") != session_id:
            raise HyperloomError(
                f"{path} belongs to {meta.get('kind', 'something else')} session {meta.get('session')!r}, not to {session_id!r}",
                "this folder is not this session's; use its own session name or start a new one",
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._lock, self._db:
            return self._db.execute(sql, args).lastrowid or 0

    # trials ---------------------------------------------------------------------------------
    def record(self, record: TrialRecord) -> TrialRecord:
        """Store a finished candidate; its seq is assigned here. A hash already present is a bug upstream."""
        with self._lock, self._db:
            seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM trials").fetchone()[0]
            record = record.model_copy(update={"seq": seq})
            self._db.execute("INSERT INTO trials (seq, hash, record, spent_s) VALUES (?, ?, ?, ?)",
                             (seq, record.hash, record.model_dump_json(), record.device_s))
        return record

    def replace(self, record: TrialRecord) -> TrialRecord:
        """Store a recorded trial's figures again (its speedup, once the baseline it is measured against lands)."""
        with self._lock, self._db:
            if self._db.execute("UPDATE trials SET record = ? WHERE hash = ? AND seq = ?",
                                (record.model_dump_json(), record.hash, record.seq)).rowcount != 1:
                raise HyperloomError(f"trial {record.hash[:16]} (seq {record.seq}) is not in {self.path}",
                                     "the session changed under the loop; resume it")
        return record

    def trials(self) -> list[TrialRecord]:
        return [TrialRecord.model_validate_json(row[0]) for row in self._query("SELECT record FROM trials ORDER BY seq")]

    def hashes(self) -> set[str]:
        return {row[0] for row in self._query("SELECT hash FROM trials")}

    def count(self) -> int:
        return self._query("SELECT COUNT(*) FROM trials")[0][0]

    # lineage of source changes --------------------------------------------------------------
    def add_lineage(self, entry: Lineage) -> None:
        self._write("INSERT OR REPLACE INTO lineage (hash, record) VALUES (?, ?)", (entry.hash, entry.model_dump_json()))

    def lineage(self) -> dict[str, Lineage]:
        return {row[0]: Lineage.model_validate_json(row[1]) for row in self._query("SELECT hash, record FROM lineage")}

    def same_build(self, build_sha256: str) -> str | None:
        """The recorded or queued candidate that built to `build_sha256`, or None."""
        for trial in self.trials():
            if trial.build_sha256 == build_sha256:
                return trial.hash
        return next((e.hash for e in self.lineage().values() if e.build_sha256 == build_sha256 and e.same_as is None), None)

    # device-seconds ---------------------------------------------------------------------------
    def add_spent(self, what: str, seconds: float) -> None:
        """Device time not attached to a recorded trial (an unfinished candidate, revalidation)."""
        if seconds > 0:
            self._write("INSERT INTO spent (what, seconds) VALUES (?, ?)", (what, seconds))

    def spent_s(self) -> float:
        return self._query("SELECT (SELECT COALESCE(SUM(spent_s), 0) FROM trials) + (SELECT COALESCE(SUM(seconds), 0) FROM spent)")[0][0]

    # external proposals -----------------------------------------------------------------------
    def propose(self, digest: str, params: dict[str, str | int], note: str) -> None:
        self._write("INSERT INTO proposals (hash, params, note) VALUES (?, ?, ?)", (digest, json.dumps(params, sort_keys=True), note))

    def take_proposal(self) -> tuple[dict[str, str | int], str] | None:
        """The oldest proposal not yet taken, marked taken in the same transaction."""
        with self._lock, self._db:
            row = self._db.execute("SELECT id, params, note FROM proposals WHERE taken = 0 ORDER BY id LIMIT 1").fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE proposals SET taken = 1 WHERE id = ?", (row[0],))
        return json.loads(row[1]), row[2]

    def release_proposals(self) -> None:
        """On resume: proposals taken by a killed run that never finished go back to the queue."""
        self._write("UPDATE proposals SET taken = 0 WHERE taken = 1 AND hash NOT IN (SELECT hash FROM trials)")

    def queued(self, digest: str) -> bool:
        """Whether a proposal with this hash is waiting or taken (not yet a trial, or recorded since)."""
        return bool(self._query("SELECT 1 FROM proposals WHERE hash = ? LIMIT 1", (digest,)))

    def pending_proposals(self) -> int:
        return self._query("SELECT COUNT(*) FROM proposals WHERE taken = 0")[0][0]

    def proposal_notes(self) -> dict[str, str]:
        return {row[0]: row[1] for row in self._query("SELECT hash, note FROM proposals")}

    # session state: every meta key is read and written here, typed ----------------------------
    def set_state(self, state: str) -> None:
        self._set("state", state)

    def request(self) -> TuneRequest | None:
        """The request the loop last ran with (a resume may change stop rules and workers)."""
        raw = self._get("request")
        return TuneRequest.model_validate_json(raw) if raw else None

    def set_request(self, request: TuneRequest) -> None:
        self._set("request", request.model_dump_json())

    def stop_reason(self) -> str | None:
        return self._get("stop_reason")

    def set_stop_reason(self, reason: str) -> None:
        self._set("stop_reason", reason)

    def stop_requested(self) -> bool:
        return bool(self._get("stop_requested"))

    def request_stop(self) -> None:
        self._set("stop_requested", "1")

    def clear_stop_request(self) -> None:
        self._clear("stop_requested")

    def runs(self) -> list[dict[str, Any]]:
        """Each loop run's entry (wall time, candidates, workers): breakdown.json's run figures."""
        return json.loads(self._get("runs") or "[]")

    def set_runs(self, runs: list[dict[str, Any]]) -> None:
        self._set("runs", json.dumps(runs))

    def revalidations(self) -> list[Revalidation]:
        return [Revalidation.model_validate(r) for r in json.loads(self._get("revalidations") or "[]")]

    def revalidation(self) -> Revalidation | None:
        """The first device's re-validation (the one older reports show)."""
        raw = json.loads(self._get("revalidation") or "null")
        return Revalidation.model_validate(raw) if raw else None

    def sweep(self) -> list[ShapeSweep]:
        return [ShapeSweep.model_validate(s) for s in json.loads(self._get("sweep") or "[]")]

    def revalidated_winner(self) -> str | None:
        return self._get("revalidated_winner")

    def set_revalidation(self, winner: str | None, revalidations: list[Revalidation], sweep: list[ShapeSweep]) -> None:
        """Store the winner's re-validation on every device and its shape sweep; winner None: nothing to re-validate."""
        self._set("revalidation", json.dumps(revalidations[0].model_dump() if revalidations else None))
        if winner is None:
            return
        self._set("revalidations", json.dumps([r.model_dump() for r in revalidations]))
        self._set("sweep", json.dumps([s.model_dump() for s in sweep]))
        self._set("revalidated_winner", winner)

    def closed_at(self) -> str | None:
        return self._get("closed_at")

    def set_closed_at(self, at: str) -> None:
        self._set("closed_at", at)

    def own_tuner_choice(self) -> AutotuneChoice | None:
        """The kernel's own autotuner's choice, once learned (tools/tune/seeds.py)."""
        raw = self._get(OWN_TUNER_CHOICE)
        return AutotuneChoice.model_validate_json(raw) if raw else None

    def set_own_tuner_choice(self, choice: AutotuneChoice) -> None:
        self._set(OWN_TUNER_CHOICE, choice.model_dump_json())

    def _get(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def _set(self, key: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _clear(self, key: str) -> None:
        self._write("DELETE FROM meta WHERE key = ?", (key,))
