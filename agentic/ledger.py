"""The effects ledger: one row per real side effect, keyed by its idempotency key, in SQLite.

`apply(key, ...)` performs an effect at most once per key: the check, the effect and the row commit in
one `BEGIN IMMEDIATE` transaction, so a second execution with the same key — a retry, a replayed
activity, a resumed run, a zombie worker — returns the first result and changes nothing. The row count
is therefore the number of effects that really happened: the assertion surface of every crash test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from agentic.sqlite_file import SqliteFile

SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    key         TEXT NOT NULL UNIQUE,
    run_id      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    result      TEXT NOT NULL,
    at          TEXT NOT NULL,
    compensates TEXT
);
CREATE INDEX IF NOT EXISTS effects_run ON effects(run_id, seq);
"""


class Effect(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    key: str
    run_id: str
    tool: str
    args: dict[str, Any]
    result: str
    at: str
    compensates: str | None = None


class Ledger(Protocol):
    """What tools and operators need of a ledger, whatever stores it (SQLite here, PostgreSQL for several
    hosts)."""

    def apply(
        self,
        key: str,
        *,
        run_id: str,
        tool: str,
        args: Mapping[str, Any],
        perform: Callable[[], str],
        compensates: str | None = None,
    ) -> tuple[str, bool]: ...

    def get(self, key: str) -> Effect | None: ...

    def effects(self, run_id: str | None = None) -> list[Effect]: ...


class EffectsLedger:
    def __init__(self, path: str | Path, busy_timeout: float = 30.0) -> None:
        self.file = SqliteFile(path, SCHEMA, busy_timeout)
        self.path = self.file.path

    def apply(
        self,
        key: str,
        *,
        run_id: str,
        tool: str,
        args: Mapping[str, Any],
        perform: Callable[[], str],
        compensates: str | None = None,
    ) -> tuple[str, bool]:
        """Perform the effect unless `key` already has one. Returns (result, performed_now)."""
        with self.file.transaction() as db:
            row = db.execute("SELECT result FROM effects WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return row[0], False
            result = perform()
            db.execute(
                "INSERT INTO effects(key, run_id, tool, args, result, at, compensates) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, run_id, tool, json.dumps(dict(args), sort_keys=True), result, _now(), compensates),
            )
            return result, True

    def get(self, key: str) -> Effect | None:
        rows = self._select("WHERE key = ?", (key,))
        return rows[0] if rows else None

    def effects(self, run_id: str | None = None) -> list[Effect]:
        if run_id is None:
            return self._select("", ())
        return self._select("WHERE run_id = ?", (run_id,))

    def _select(self, where: str, params: tuple[Any, ...]) -> list[Effect]:
        with self.file.connect() as db:
            rows = db.execute(
                f"SELECT seq, key, run_id, tool, args, result, at, compensates FROM effects {where} ORDER BY seq",
                params,
            ).fetchall()
        return [
            Effect(
                seq=r[0],
                key=r[1],
                run_id=r[2],
                tool=r[3],
                args=json.loads(r[4]),
                result=r[5],
                at=r[6],
                compensates=r[7],
            )
            for r in rows
        ]


def _now() -> str:
    return datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds")
