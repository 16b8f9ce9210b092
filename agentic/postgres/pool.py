"""One PostgreSQL database and its connection pool, with failures turned into one retryable, named error.

A store call never hangs on a dead server: a new connection gives up after `connect_timeout`, a call waits
at most `timeout` for a pooled one, and TCP keepalives notice a peer that vanished mid-query. Each failure
becomes `StoreUnavailable` naming host:port/database (never the password); it is an ordinary exception, so a
Temporal activity that meets it is retried, and once the server is back the pool reconnects by itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from agentic.postgres import schema
from agentic.store_unavailable import StoreUnavailable


def describe(url: str) -> str:
    """`host:port/database` of a connection URL: enough to find the server, nothing secret."""
    parts = conninfo_to_dict(url)
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


# The pool logs each failed reconnection attempt: into the application's logs when it has configured logging
# (a worker's JSON log), never as stray lines on a command's stderr.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

# libpq options every connection gets: fail fast on connect, notice a silent peer within ~25 s.
CONNECTION_OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "application_name": "durable-agents",
}


class Database:
    def __init__(self, url: str, *, max_size: int = 10, timeout: float = 10.0) -> None:
        self.url = url
        self.where = describe(url)
        self.timeout = timeout
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, **CONNECTION_OPTIONS},
            timeout=timeout,
            # A connection broken by a server restart is noticed (and replaced) before it is handed out.
            check=ConnectionPool.check_connection,
            # Give up a reconnection attempt after this long; the next call starts a fresh one (backoff from 1 s).
            reconnect_timeout=30.0,
            open=False,
            name=f"agent-stores {self.where}",
        )
        self.pool.open(wait=False)  # a server that is down now must not fail construction: calls will say so
        self._schema_ready = False
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled autocommit connection; `StoreUnavailable` when the server cannot be reached."""
        try:
            with self.pool.connection() as db:
                self._ensure_schema(db)
                yield db
        except PoolTimeout as exc:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {self._why(exc)}") from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {_first_line(exc)}") from exc

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        with self.connection() as db, db.transaction():
            yield db

    def check(self) -> None:
        """Connect once, directly, and run `SELECT 1`: the clear failure a worker wants at start."""
        try:
            with psycopg.connect(self.url, autocommit=True, **CONNECTION_OPTIONS) as db:  # type: ignore[arg-type]
                db.execute("SELECT 1")
        except psycopg.Error as exc:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {_first_line(exc)}") from exc

    def migrate(self) -> None:
        """Create the tables now rather than on first use (`starter.py migrate`); idempotent."""
        with self.connection():
            pass

    def close(self) -> None:
        self.pool.close()

    def _ensure_schema(self, db: psycopg.Connection) -> None:
        """The tables exist before this process's first statement (once per process; cheap after)."""
        if self._schema_ready:
            return
        with self._lock:
            if not self._schema_ready:
                schema.create(db)
                self._schema_ready = True

    def _why(self, timeout: PoolTimeout) -> str:
        """Why the pool had no connection: the server's own refusal when a direct attempt shows one."""
        try:
            with psycopg.connect(self.url, **CONNECTION_OPTIONS):  # type: ignore[arg-type]
                pass
        except psycopg.Error as exc:
            return _first_line(exc)
        return f"no free connection within {self.timeout:g} s ({_first_line(timeout)})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
