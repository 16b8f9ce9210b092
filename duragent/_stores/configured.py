"""Where the effects ledger, the transcript store and the fact store live: the one place that chooses.

With `AGENT_DATABASE_URL` (a PostgreSQL URL) all three live in that database, shared by every worker host,
through one connection pool per process. Without it, the embedded SQLite files: the ledger at `AGENT_LEDGER`
(default `AGENT_DATA_DIR/ledger.db`), `transcripts.db` next to it and `facts.db` in the data directory —
correct for the processes of one host only. With codec keys, transcript bodies are encrypted at rest on either
backend.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from duragent._config.codec import AesGcmCodec, KeyRing, load_keyring
from duragent._config.settings import Settings
from duragent._stores.encrypted import EncryptedTranscriptStore
from duragent._stores.errors import StoreUnavailable
from duragent._stores.facts import DurableFactStore, SqliteFactStore
from duragent._stores.ledger import EffectsLedger, PrunableLedger
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts, TranscriptStore

if TYPE_CHECKING:  # psycopg is imported only by processes that use PostgreSQL
    from duragent._stores.postgres import Database

__all__ = [
    "Migrated",
    "StoreUnavailable",
    "check",
    "close_all",
    "database",
    "facts_for",
    "migrate",
    "open_facts",
    "open_ledger",
    "open_transcripts",
    "transcripts_for",
]

TRANSCRIPTS_FILE = "transcripts.db"
FACTS_FILE = "facts.db"

_databases: dict[str, Database] = {}
_lock = threading.Lock()


def database(url: str) -> Database:
    """This process's pool for `url`: the ledger and the transcripts share it."""
    from duragent._stores.postgres import Database

    with _lock:
        if url not in _databases:
            _databases[url] = Database(url)
        return _databases[url]


def open_ledger(database_url: str | None, ledger_path: Path) -> PrunableLedger:
    if database_url:
        from duragent._stores.postgres import PostgresLedger

        return PostgresLedger(database(database_url))
    return EffectsLedger(ledger_path)


def open_transcripts(database_url: str | None, directory: Path, keyring: KeyRing | None = None) -> Transcripts:
    """`directory`: where the SQLite file goes without a URL (next to the SQLite ledger)."""
    store: TranscriptStore
    if database_url:
        from duragent._stores.postgres import PostgresTranscriptStore

        store = PostgresTranscriptStore(database(database_url))
    else:
        store = SqliteTranscriptStore(directory / TRANSCRIPTS_FILE)
    if keyring is not None:
        store = EncryptedTranscriptStore(store, AesGcmCodec(keyring))
    return Transcripts(store)


def transcripts_for(settings: Settings) -> Transcripts:
    """The transcript store the workers configured like this process use: AGENT_DATABASE_URL's PostgreSQL
    (shared by worker hosts), else SQLite in the data directory; encrypted at rest when codec keys are set."""
    keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    return open_transcripts(settings.database_url, settings.data_dir, keyring)


def open_facts(database_url: str | None, directory: Path) -> DurableFactStore:
    """The durable fact store (agent memory): `directory`/facts.db without a URL, created on first use."""
    if database_url:
        from duragent._stores.postgres import PostgresFactStore

        return PostgresFactStore(database(database_url))
    return SqliteFactStore(directory / FACTS_FILE)


def facts_for(settings: Settings | None = None) -> DurableFactStore:
    """The fact store the workers configured like this process use (`AGENT_DATABASE_URL`, `AGENT_DATA_DIR`; no
    `settings`: the environment's): how an operator's program reads or purges agents' memory — facts live
    there, not in Temporal."""
    settings = settings if settings is not None else Settings.from_env()
    return open_facts(settings.database_url, settings.data_dir)


def check(database_url: str | None) -> None:
    """At worker start: `StoreUnavailable` (one clear line) when the shared database cannot be reached."""
    if database_url:
        database(database_url).check()


@dataclass(frozen=True)
class Migrated:
    """What `migrate` did, where (host:port/database: never the URL, which may hold a password)."""

    where: str
    created: list[str]
    existing: list[str]

    def __str__(self) -> str:
        if not self.created:
            return f"the stores' tables were already in PostgreSQL at {self.where}: nothing to do"
        done = f"created {', '.join(self.created)} in PostgreSQL at {self.where}"
        return done + (f" ({', '.join(self.existing)} already there)" if self.existing else "")


def migrate(database_url: str) -> Migrated:
    """Create the shared stores' tables now (`starter.py migrate`), rather than on the first worker's first use."""
    from duragent._stores.postgres.schema import TABLES

    db = database(database_url)
    created = db.migrate()
    return Migrated(db.where, created, [name for name in TABLES if name not in created])


def close_all() -> None:
    """Close every pool this process opened (tests; a process that ends need not)."""
    with _lock:
        for db in _databases.values():
            db.close()
        _databases.clear()
