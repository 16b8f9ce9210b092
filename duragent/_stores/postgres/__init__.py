"""The stores on PostgreSQL, for workers on several hosts: the transcript store, the effects ledger and the
fact store share one database (`AGENT_DATABASE_URL`) and one connection pool per process. Without a URL, the
embedded SQLite files stay the default (duragent/_stores/configured.py chooses)."""

from agentic.extras import require_extra
from duragent._stores.errors import StoreUnavailable

require_extra("postgres")  # before psycopg is imported: one line naming the extra

from duragent._stores.postgres.facts import PostgresFactStore
from duragent._stores.postgres.ledger import PostgresLedger
from duragent._stores.postgres.pool import Database, describe
from duragent._stores.postgres.transcripts import PostgresTranscriptStore

__all__ = ["Database", "PostgresFactStore", "PostgresLedger", "PostgresTranscriptStore", "StoreUnavailable", "describe"]
