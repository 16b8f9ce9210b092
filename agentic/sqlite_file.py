"""One SQLite file shared by threads and processes: WAL, a busy timeout, a connection per thread.

Each thread gets its own connection, kept open (opening one per operation cost a worker several
milliseconds a run); no connection is shared between threads, no transaction is held between operations,
and writers in other processes (workers, a zombie worker, the command line) queue on the busy timeout
instead of failing.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class SqliteFile:
    def __init__(self, path: str | Path, schema: str, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        with self.connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(schema)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's autocommit connection: reads need no transaction; writes use `transaction()`."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        yield db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """`BEGIN IMMEDIATE`: the write lock is taken up front, so a check-then-write cannot race."""
        with self.connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            if db.in_transaction:
                db.execute("COMMIT")
