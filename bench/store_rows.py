"""What a batch of runs wrote to the stores, counted in the storage itself: rows added to the transcript store
and the effects ledger (both backends), and on PostgreSQL also the write statements the server executed
(`pg_stat_statements`: every INSERT, an `ON CONFLICT DO NOTHING` of a row already there included) — the
round trips a step costs. Rows are content-addressed and only `starter.py prune` deletes them, so a difference
of counts is what was added. Owner rows (which run wrote a row, for retention) count as rows."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg

TABLES = {
    "transcript_blobs": "transcripts",
    "transcript_nodes": "transcripts",
    "transcript_owners": "transcripts",
    "effects": "ledger",
}
SQLITE_TABLES = {"blobs": "transcripts.db", "nodes": "transcripts.db", "owners": "transcripts.db"}


@dataclass(frozen=True)
class StoreCount:
    rows: int
    writes: int | None  # INSERT statements executed; None where the backend cannot say (SQLite)

    def minus(self, earlier: StoreCount) -> StoreCount:
        writes = None if self.writes is None or earlier.writes is None else self.writes - earlier.writes
        return StoreCount(self.rows - earlier.rows, writes)


def sqlite_count(data_dir: Path, ledger: Path) -> StoreCount:
    rows = 0
    for table, file in SQLITE_TABLES.items():
        rows += _sqlite_rows(data_dir / file, table)
    return StoreCount(rows + _sqlite_rows(ledger, "effects"), None)


def postgres_count(url: str) -> StoreCount:
    with psycopg.connect(url, autocommit=True) as db:
        present = {r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        rows = sum(
            int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]
            for table in TABLES
            if table in present
        )
        return StoreCount(rows, _insert_statements(db))


def _sqlite_rows(file: Path, table: str) -> int:
    if not file.exists():
        return 0
    with sqlite3.connect(file) as db:
        try:
            return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        except sqlite3.OperationalError:  # the table does not exist yet
            return 0


def _insert_statements(db: psycopg.Connection) -> int | None:
    """INSERTs into the stores' tables executed in this database so far; None without pg_stat_statements."""
    try:
        row = db.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query ILIKE 'INSERT INTO %'"
        ).fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row else None
