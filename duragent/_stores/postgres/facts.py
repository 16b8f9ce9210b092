"""The durable fact store on PostgreSQL: the SQL of `DurableFactStore`, on the database the ledger and the
transcripts share (`AGENT_DATABASE_URL`), so every worker host reads and writes the same memory.

A write is one `INSERT ... ON CONFLICT (namespace, write_key) DO NOTHING`: two hosts running the same tool call
(a zombie worker and its replacement) race on the unique index, and the second finds the first's version.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from duragent._stores.facts import DurableFactStore
from duragent._stores.postgres.pool import Database


class PostgresFactStore(DurableFactStore):
    def __init__(self, database: Database) -> None:
        self.database = database

    def _reading(self) -> AbstractContextManager[Any]:
        return self.database.connection()

    def _writing(self) -> AbstractContextManager[Any]:
        return self.database.transaction()

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _time(self, at: datetime) -> Any:
        return at
