"""The effects ledger: one row per real side effect, keyed by its idempotency key.

`apply(key, ...)` performs an effect at most once per key: the check, the effect and the row commit in
one transaction, so a second execution with the same key — a retry, a replayed activity, a resumed run, a
zombie worker — returns the first result and changes nothing. The row count is therefore the number of
effects that really happened: the assertion surface of every crash test.

`Ledger` is the interface; `EffectsLedger` is the embedded one (SQLite, a `BEGIN IMMEDIATE` transaction)
and `duragent._stores.postgres.PostgresLedger` the one workers on several hosts share.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from duragent._stores.sqlite_file import SqliteFile

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
    ) -> tuple[str, bool]:
        """Perform the effect unless `key` already has one. Returns (result, performed_now)."""
        ...

    def get(self, key: str) -> Effect | None: ...

    def effects(self, run_id: str | None = None) -> list[Effect]: ...


class PrunableLedger(Ledger, Protocol):
    """A ledger whose rows retention can delete, one run at a time, once they are archived."""

    def purge(self, run_id: str) -> int:
        """Delete every row of `run_id` (a closed run's, archived first: `starter.py prune`); returns how many."""
        ...


def args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), sort_keys=True)


def now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)


def timestamp(at: datetime) -> str:
    """An effect's time as both ledgers show it: ISO 8601 in UTC, to the millisecond."""
    return at.astimezone(UTC).isoformat(timespec="milliseconds")


def effect_from_row(row: Sequence[Any]) -> Effect:
    """An `Effect` from (seq, key, run_id, tool, args JSON, result, at, compensates)."""
    seq, key, run_id, tool, args, result, at, compensates = row
    return Effect(
        seq=seq,
        key=key,
        run_id=run_id,
        tool=tool,
        args=json.loads(args),
        result=result,
        at=at if isinstance(at, str) else timestamp(at),
        compensates=compensates,
    )


class ReadsEffects:
    """`get` and `effects` of a ledger, over its `_select(where, params)` in its SQL's placeholder style."""

    PLACEHOLDER = "?"

    def get(self, key: str) -> Effect | None:
        rows = self._select(f"WHERE key = {self.PLACEHOLDER}", (key,))
        return rows[0] if rows else None

    def effects(self, run_id: str | None = None) -> list[Effect]:
        if run_id is None:
            return self._select("", ())
        return self._select(f"WHERE run_id = {self.PLACEHOLDER}", (run_id,))

    def _select(self, where: str, params: tuple[Any, ...]) -> list[Effect]:
        raise NotImplementedError


class EffectsLedger(ReadsEffects):
    """The embedded ledger: one SQLite file (shared by the processes of one host)."""

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
                (key, run_id, tool, args_json(args), result, timestamp(now()), compensates),
            )
            return result, True

    def purge(self, run_id: str) -> int:
        with self.file.transaction() as db:
            return db.execute("DELETE FROM effects WHERE run_id = ?", (run_id,)).rowcount

    def _select(self, where: str, params: tuple[Any, ...]) -> list[Effect]:
        with self.file.connect() as db:
            rows = db.execute(
                f"SELECT seq, key, run_id, tool, args, result, at, compensates FROM effects {where} ORDER BY seq",
                params,
            ).fetchall()
        return [effect_from_row(r) for r in rows]
