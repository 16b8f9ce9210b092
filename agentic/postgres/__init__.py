"""The stores on PostgreSQL, for workers on several hosts: the transcript store, the effects ledger and the
fact store share one database (`AGENT_DATABASE_URL`) and one connection pool per process. Without a URL, the
embedded SQLite files stay the default (ops/stores.py chooses)."""

from agentic.postgres.facts import PostgresFactStore
from agentic.postgres.ledger import PostgresLedger
from agentic.postgres.pool import Database, describe
from agentic.postgres.transcripts import PostgresTranscriptStore
from agentic.store_unavailable import StoreUnavailable

__all__ = ["Database", "PostgresFactStore", "PostgresLedger", "PostgresTranscriptStore", "StoreUnavailable", "describe"]
