"""The effects ledger on PostgreSQL: the same interface as the SQLite `EffectsLedger`, shared by hosts.

`apply` checks, performs and records in ONE transaction that first takes a transaction-scoped advisory lock
on the key: a second `apply` of the same key — on this host or another — waits until the first commits and
then finds its row (or, if the first rolled back, performs it itself). Different keys do not wait for each
other, unlike SQLite's single writer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from duragent._stores.ledger import Effect, ReadsEffects, args_json, effect_from_row, now
from duragent._stores.postgres.pool import Database

KEY_LOCKS = 0x5C4E_0002  # advisory lock class of ledger keys: (KEY_LOCKS, hashtext(key))
COLUMNS = "seq, key, run_id, tool, args, result, at, compensates"


class PostgresLedger(ReadsEffects):
    PLACEHOLDER = "%s"

    def __init__(self, database: Database) -> None:
        self.database = database

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
        with self.database.transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (KEY_LOCKS, key))
            row = db.execute("SELECT result FROM effects WHERE key = %s", (key,)).fetchone()
            if row is not None:
                return bytes(row[0]).decode(), False
            result = perform()
            db.execute(
                "INSERT INTO effects (key, run_id, tool, args, result, at, compensates)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (key, run_id, tool, args_json(args), result.encode(), now(), compensates),
            )
            return result, True

    def purge(self, run_id: str) -> int:
        with self.database.connection() as db:
            return db.execute("DELETE FROM effects WHERE run_id = %s", (run_id,)).rowcount

    def _select(self, where: str, params: tuple[Any, ...]) -> list[Effect]:
        with self.database.connection() as db:
            rows = db.execute(f"SELECT {COLUMNS} FROM effects {where} ORDER BY seq", params).fetchall()  # type: ignore[arg-type]
        return [effect_from_row((*r[:5], bytes(r[5]).decode(), *r[6:])) for r in rows]
