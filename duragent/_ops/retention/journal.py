"""The prune journal: which runs `starter.py prune` has archived and is deleting, until Temporal no longer has them.

A run's entry is written after its archive is durable and before anything of it is deleted; it is removed once
Temporal reports the run gone. So a prune that was killed, or whose deletions Temporal had not finished (the
server deletes asynchronously), is finished by the next one — which then neither archives the run again nor
mistakes its already released transcript for a store that never had it. One row per run being deleted: the
table stays as small as the backlog of one prune.

It lives with the stores it is about: `AGENT_DATA_DIR/retention.db`, or table `prune_journal` in
`AGENT_DATABASE_URL`'s PostgreSQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from duragent._stores import configured as stores
from duragent._stores.ledger import now, timestamp
from duragent._stores.sqlite_file import SqliteFile

if TYPE_CHECKING:
    from duragent._stores.postgres import Database

JOURNAL_FILE = "retention.db"


@dataclass(frozen=True)
class Entry:
    run_id: str  # the workflow id: what the stores key the run's rows by
    executions: tuple[str, ...]  # Temporal run ids of its continue-as-new chain, oldest first
    archive: str  # the file that holds it
    at: str


class PruneJournal(Protocol):
    def add(self, run_id: str, executions: list[str], archive: str) -> None: ...
    def entries(self) -> list[Entry]: ...
    def remove(self, run_id: str) -> None: ...


class SqlitePruneJournal:
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS prune_journal (run_id TEXT PRIMARY KEY, executions TEXT NOT NULL,"
        " archive TEXT NOT NULL, at TEXT NOT NULL);"
    )

    def __init__(self, path: Path) -> None:
        self.file = SqliteFile(path, self.SCHEMA)

    def add(self, run_id: str, executions: list[str], archive: str) -> None:
        with self.file.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO prune_journal (run_id, executions, archive, at) VALUES (?, ?, ?, ?)",
                (run_id, json.dumps(executions), archive, timestamp(now())),
            )

    def entries(self) -> list[Entry]:
        with self.file.connect() as db:
            rows = db.execute("SELECT run_id, executions, archive, at FROM prune_journal ORDER BY at, run_id")
            return [_entry(*row) for row in rows.fetchall()]

    def remove(self, run_id: str) -> None:
        with self.file.transaction() as db:
            db.execute("DELETE FROM prune_journal WHERE run_id = ?", (run_id,))


class PostgresPruneJournal:
    def __init__(self, database: Database) -> None:
        self.database = database

    def add(self, run_id: str, executions: list[str], archive: str) -> None:
        with self.database.connection() as db:
            db.execute(
                "INSERT INTO prune_journal (run_id, executions, archive, at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (run_id) DO UPDATE SET executions = EXCLUDED.executions, archive = EXCLUDED.archive,"
                " at = EXCLUDED.at",
                (run_id, json.dumps(executions), archive, timestamp(now())),
            )

    def entries(self) -> list[Entry]:
        with self.database.connection() as db:
            rows = db.execute("SELECT run_id, executions, archive, at FROM prune_journal ORDER BY at, run_id")
            return [_entry(*row) for row in rows.fetchall()]

    def remove(self, run_id: str) -> None:
        with self.database.connection() as db:
            db.execute("DELETE FROM prune_journal WHERE run_id = %s", (run_id,))


def _entry(run_id: str, executions: str, archive: str, at: str) -> Entry:
    return Entry(run_id, tuple(json.loads(executions)), archive, at)


def open_prune_journal(database_url: str | None, directory: Path) -> PruneJournal:
    """`starter.py prune`'s journal: next to the stores it prunes (in their PostgreSQL database, or a SQLite file)."""
    if database_url:
        return PostgresPruneJournal(stores.database(database_url))
    return SqlitePruneJournal(directory / JOURNAL_FILE)
