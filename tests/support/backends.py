"""The two store backends, side by side, so one test body runs against both: the embedded SQLite files and
a real PostgreSQL database (a fresh one per test). `rows()` and `raw_bodies()` read the storage itself, below
the interface, for assertions the interface cannot make (how many rows were written, what is on disk)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from duragent._stores.facts import DurableFactStore, SqliteFactStore
from duragent._stores.ledger import EffectsLedger, Ledger
from duragent._stores.postgres import Database, PostgresFactStore, PostgresLedger, PostgresTranscriptStore
from duragent._stores.transcripts import SqliteTranscriptStore, TranscriptStore

BACKENDS = ["sqlite", "postgres"]

# The stores' PostgreSQL tables, in the order `migrate` reports them: spelled out here, not read from the
# schema, so a table added or lost there fails the tests that check them.
POSTGRES_TABLES = (
    "transcript_blobs",
    "transcript_nodes",
    "transcript_owners",
    "effects",
    "prune_journal",
    "facts",
    "fact_audit",
)


@dataclass
class Backend:
    name: str
    directory: Path  # the SQLite files
    url: str | None = None  # the PostgreSQL database
    _opened: list[Database] = field(default_factory=list)

    def database(self) -> Database:
        assert self.url is not None
        database = Database(self.url, timeout=3.0)
        self._opened.append(database)
        return database

    def transcript_store(self) -> TranscriptStore:
        """A new store object over the same storage (as another worker process would open it)."""
        if self.url:
            return PostgresTranscriptStore(self.database())
        return SqliteTranscriptStore(self.directory / "transcripts.db")

    def ledger(self) -> Ledger:
        if self.url:
            return PostgresLedger(self.database())
        return EffectsLedger(self.directory / "ledger.db")

    def fact_store(self) -> DurableFactStore:
        if self.url:
            return PostgresFactStore(self.database())
        return SqliteFactStore(self.directory / "facts.db")

    def rows(self, kind: str) -> int:
        """Rows of `blobs`, `nodes`, `owners`, `effects`, `facts` or `fact_audit`, counted in the storage itself."""
        if self.url:
            table = {"blobs": "transcript_blobs", "nodes": "transcript_nodes", "owners": "transcript_owners"}.get(
                kind, kind
            )
            with psycopg.connect(self.url) as db:
                return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]
        file = {"effects": "ledger.db", "facts": "facts.db", "fact_audit": "facts.db"}.get(kind, "transcripts.db")
        with sqlite3.connect(self.directory / file) as db:
            return int(db.execute(f"SELECT count(*) FROM {kind}").fetchone()[0])

    def raw_bodies(self) -> bytes:
        """Every stored blob body as bytes, straight from storage."""
        if self.url:
            with psycopg.connect(self.url) as db:
                return b"".join(bytes(body) for (body,) in db.execute("SELECT body FROM transcript_blobs"))
        return b"".join(p.read_bytes() for p in self.directory.glob("transcripts.db*"))

    def close(self) -> None:
        for database in self._opened:
            database.close()
