"""One PostgreSQL database and its connection pool, with failures turned into one retryable, named error.

A store call never hangs on a dead server: a new connection gives up after `connect_timeout`, a call waits
at most `timeout` for a pooled one, and TCP keepalives notice a peer that vanished mid-query. A call that
finds no pooled connection within a second asks the server directly whether it accepts connections at all:
a refusal fails the call then (about a second), not after the whole `timeout`, which is for a busy pool.
Each failure becomes `StoreUnavailable` naming host:port/database (never the password); it is an ordinary
exception, so a Temporal activity that meets it is retried, and once the server is back the pool reconnects
by itself.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from duragent._config.secrets import env_or_file
from duragent._stores.errors import StoreUnavailable
from duragent._stores.postgres import schema

PASSWORD_FILE_ENV = "PGPASSWORD_FILE"


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


def file_password(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`{"password": ...}` from the file `PGPASSWORD_FILE` names (a container secret: libpq itself reads the
    password only from PGPASSWORD, which `docker inspect` shows, or a .pgpass file it ignores unless 0600 —
    which a non-root container user cannot read). Empty when unset; ValueError when unreadable, or with
    PGPASSWORD set too."""
    found = env_or_file(os.environ if environ is None else environ, "PGPASSWORD", PASSWORD_FILE_ENV, ValueError)
    if found is None or found[1] == "PGPASSWORD":
        return {}  # libpq reads PGPASSWORD itself
    return {"password": found[0].rstrip("\r\n")}


# How long a call waits for a pooled connection before asking the server directly whether it is there.
ASK_AFTER = 1.0


class Database:
    def __init__(self, url: str, *, max_size: int = 10, timeout: float = 10.0) -> None:
        self.url = url
        self.where = describe(url)
        self.timeout = timeout
        self._options = {**CONNECTION_OPTIONS, **file_password()}
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, **self._options},
            timeout=timeout,
            # A connection broken by a server restart is noticed (and replaced) before it is handed out.
            check=ConnectionPool.check_connection,
            # Give up a reconnection attempt after this long; the next call that waits starts a fresh one. Short,
            # so that a server back from a restart is found within seconds, not at the end of a long backoff.
            reconnect_timeout=5.0,
            open=False,
            name=f"agent-stores {self.where}",
        )
        # Opened by the first call, not here: constructing never fails or connects (a worker checks its database
        # first, with one clear line; a command that opens the stores and does not use them makes no connection).
        self._opened = False
        self._schema_ready = False
        self._created: list[str] = []
        self._lock = threading.Lock()
        self._asked_at = -ASK_AFTER
        self._answer: psycopg.Error | None = None
        self._ask_lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled autocommit connection; `StoreUnavailable` when the server cannot be reached."""
        db = self._checkout()
        try:
            with db:  # as the pool's own context manager: roll back what a failed block left open
                self._ensure_schema(db)
                yield db
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {_first_line(exc)}") from exc
        finally:
            self.pool.putconn(db)  # a broken connection is discarded, and replaced, by the pool

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        with self.connection() as db, db.transaction():
            yield db

    def check(self) -> None:
        """Connect once, directly, and run `SELECT 1`: the clear failure a worker wants at start."""
        try:
            with psycopg.connect(self.url, autocommit=True, **self._options) as db:  # type: ignore[arg-type]
                db.execute("SELECT 1")
        except psycopg.Error as exc:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {_first_line(exc)}") from exc

    def migrate(self) -> list[str]:
        """Create the tables now rather than on first use (`starter.py migrate`); idempotent. Returns the
        tables this process created (none when they were already there)."""
        with self.connection():
            return list(self._created)

    def close(self) -> None:
        self.pool.close()

    def _ensure_schema(self, db: psycopg.Connection) -> None:
        """The tables exist before this process's first statement (once per process; cheap after)."""
        if self._schema_ready:
            return
        with self._lock:
            if not self._schema_ready:
                self._created = schema.create(db)
                self._schema_ready = True

    def _checkout(self) -> psycopg.Connection:
        """A pooled connection within `timeout` — unless the server refuses connections: then at once."""
        if not self._opened:
            with self._lock:
                if not self._opened:
                    self.pool.open(wait=False)  # a server that is down now: the calls below say so
                    self._opened = True
        first = min(ASK_AFTER, self.timeout)
        try:
            return self.pool.getconn(timeout=first)
        except PoolTimeout:
            pass
        refusal = self._refusal()
        if refusal is not None:
            raise StoreUnavailable(f"PostgreSQL at {self.where} is unavailable: {_first_line(refusal)}") from refusal
        try:  # the server is there: the pool is busy, or reconnecting after a restart
            return self.pool.getconn(timeout=self.timeout - first)
        except PoolTimeout as exc:
            raise StoreUnavailable(
                f"PostgreSQL at {self.where} is unavailable: no free connection within {self.timeout:g} s"
            ) from exc

    def _refusal(self) -> psycopg.Error | None:
        """Why the server refuses a direct connection now, or None when it accepts one. One attempt answers
        every caller that asks within `ASK_AFTER`, so a starved pool does not become a stampede of connects."""
        with self._ask_lock:
            if time.monotonic() - self._asked_at >= ASK_AFTER:
                try:
                    psycopg.connect(self.url, **self._options).close()  # type: ignore[arg-type]
                    self._answer = None
                except psycopg.Error as exc:
                    self._answer = exc
                self._asked_at = time.monotonic()
            return self._answer


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
