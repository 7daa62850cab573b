"""ledger.sqlite of a campaign: one row per finished measurement (a candidate, a revalidation, a sweep point), the
queue of the agent's proposals, and the campaign's state (phase, stack, device-seconds spent, stop reason).

A row is written in one transaction when its measurement ends, so a campaign killed at any moment holds every
finished one and nothing half-done; the unique key keeps a measurement from running twice across resumes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.optimize.models import Record, stack_of

KIND = "hyperloom.optimize.ledger/1"
# where a campaign's device time goes: freezing the workload (its two runs and the twin), starting reference workers
# (build, warm-up, outputs, profile; the first candidate's worker built beside the baseline's), the baseline's solo
# legs, the trials (each record's device_s), the profile for kernel proposals
PARTS = ("freeze", "references", "solo legs", "trials", "profile")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS proposals (id INTEGER PRIMARY KEY AUTOINCREMENT, levers TEXT NOT NULL, note TEXT NOT NULL, taken INTEGER NOT NULL DEFAULT 0);
"""  # noqa: E501


class Ledger:
    """A thread-safe wrapper over the campaign's SQLite file (WAL; every write its own transaction)."""

    def __init__(self, path: Path, session: str, *, create: bool) -> None:
        if not create and not path.is_file():
            raise HyperloomError(f"{path.name} is missing from the session folder",
                                 "the session is incomplete; start another under a new name")
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            with self._db:
                self._db.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", [("kind", KIND), ("session", session)])
            meta = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN ('kind', 'session')").fetchall())
        except sqlite3.DatabaseError as exc:
            raise HyperloomError(f"{path.name} is not a readable campaign ledger ({exc})",
                                 "move the session aside and start a new one") from exc
        if meta != {"kind": KIND, "session": session}:
            raise HyperloomError(f"{path.name} belongs to {meta.get('kind')} session {meta.get('session')!r}, not to {session!r}",
                                 "open it under its own name")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        with self._lock, self._db:
            self._db.execute(sql, args)

    # measurements ----------------------------------------------------------------------------
    def record(self, record: Record) -> Record:
        """Store a finished measurement and add its device-seconds to the spent; its seq is assigned here."""
        with self._lock, self._db:
            seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM records").fetchone()[0]
            record = record.model_copy(update={"seq": seq})
            self._db.execute("INSERT INTO records (seq, key, record) VALUES (?, ?, ?)", (seq, record.key, record.model_dump_json()))
            self._add_spent(record.device_s, "trials")
        return record

    def records(self) -> list[Record]:
        return [Record.model_validate_json(row[0]) for row in self._query("SELECT record FROM records ORDER BY seq")]

    def find(self, key: str) -> Record | None:
        rows = self._query("SELECT record FROM records WHERE key = ?", (key,))
        return Record.model_validate_json(rows[0][0]) if rows else None

    # what the records say -----------------------------------------------------------------------
    def stack(self) -> list[str]:
        """The levers kept now (models.stack_of)."""
        return stack_of(self.records())

    def candidates(self) -> list[Record]:
        """The search's candidates that ran (levers, combine, kernels); a lever recorded without a run left out."""
        return [r for r in self.records() if r.phase in ("levers", "combine", "kernels") and r.device_s > 0]

    def winners(self) -> list[Record]:
        """The levers phase's WINNERs, in the order they were recorded."""
        return [r for r in self.records() if r.phase == "levers" and r.decision == "WINNER"]

    def gain(self) -> float | None:
        """The kept stack's gain: its latest revalidation against the baseline, or None before one."""
        stack = self.stack()
        found = [r for r in self.records() if r.phase == "revalidate" and r.decision == "MEASURED" and r.result.levers == stack]
        return found[-1].result.speedup if found and stack else None

    def kept(self, stack: list[str]) -> Record | None:
        """The latest KEEP of exactly `stack`."""
        return next((r for r in reversed(self.records()) if r.decision == "KEEP" and r.result.levers == stack), None)

    def followed(self) -> set[frozenset[str]]:
        """The lever sets the levers phase ran (follow-ups included)."""
        return {frozenset(r.result.levers) for r in self.records() if r.phase == "levers" and r.device_s > 0}

    def mean_trial_s(self) -> float | None:
        """The mean device seconds of the trials so far (the baseline's own left out), or None before the first."""
        trials = [r.device_s for r in self.records() if r.device_s > 0 and r.phase != "baseline"]
        return sum(trials) / len(trials) if trials else None

    def baseline(self) -> dict[str, Any]:
        """What the baseline phase recorded (its solo legs' stats, points, knob defaults, evidence); {} before it."""
        return self.get_json("baseline", {})

    def solo_s(self) -> float | None:
        """The baseline's step alone: the median of its solo legs, or None before they ran."""
        return self.baseline().get("stats", {}).get("median_s")

    # device-seconds ---------------------------------------------------------------------------
    def spent_s(self) -> float:
        return float(self.get("spent_s") or 0.0)

    def spent_parts_s(self) -> dict[str, float]:
        """The device-seconds spent by part (PARTS), in the order they were first spent."""
        return self.get_json("spent_parts_s", {})

    def add_spent(self, seconds: float, part: str) -> None:
        """Device time no record carries, under its part (PARTS: freezing, reference workers' start, the solo legs, the profile)."""
        with self._lock, self._db:
            self._add_spent(seconds, part)

    def _add_spent(self, seconds: float, part: str) -> None:
        if part not in PARTS:
            raise ValueError(f"unknown part of the spent device time: {part!r}")
        rows = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN ('spent_s', 'spent_parts_s')").fetchall())
        parts = json.loads(rows.get("spent_parts_s", "{}"))
        parts[part] = parts.get(part, 0.0) + seconds
        self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [("spent_s", repr(float(rows.get("spent_s", 0.0)) + seconds)), ("spent_parts_s", json.dumps(parts))])

    # the agent's proposals ----------------------------------------------------------------------
    def propose(self, levers: list[str], note: str) -> None:
        self._write("INSERT INTO proposals (levers, note) VALUES (?, ?)", (json.dumps(levers), note))

    def queued(self) -> list[tuple[int, list[str], str]]:
        return [(row[0], json.loads(row[1]), row[2])
                for row in self._query("SELECT id, levers, note FROM proposals WHERE taken = 0 ORDER BY id")]

    def take(self, proposal_id: int) -> None:
        self._write("UPDATE proposals SET taken = 1 WHERE id = ?", (proposal_id,))

    # state -----------------------------------------------------------------------------------
    def get(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set(self, key: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def clear(self, key: str) -> None:
        self._write("DELETE FROM meta WHERE key = ?", (key,))

    def get_json(self, key: str, default: Any) -> Any:
        raw = self.get(key)
        return json.loads(raw) if raw is not None else default

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, json.dumps(value))

    def add_note(self, note: str) -> None:
        notes = self.get_json("notes", [])
        if note not in notes:
            self.set_json("notes", [*notes, note])
