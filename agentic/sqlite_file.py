"""One SQLite file shared by threads and processes: WAL, a busy timeout, a connection per thread.

Each thread gets its own connection, kept open (opening one per operation cost a worker several
milliseconds a run); no connection is shared between threads, no transaction is held between operations,
and writers in other processes (workers, a zombie worker, the command line) queue on the busy timeout
instead of failing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def private_dir(path: Path) -> None:
    """Create `path` and any missing parents owner-only (0700); directories that exist are left alone."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)


def create_private(path: Path) -> None:
    """Make `path` an owner-only file (0600) in an owner-only directory (0700 when we create it), whatever the
    umask: the stores hold tool arguments, results and transcripts. SQLite gives its -wal and -shm files the
    database file's permissions. Files an earlier version created readable by others are tightened; an
    existing directory is the operator's choice and left alone."""
    private_dir(path.parent)
    if not path.exists():
        # Only a file that does not exist yet is opened here. Closing any descriptor of a database file drops
        # every POSIX lock this process holds on it, the locks of SQLite connections already open included:
        # another store object in the same process would then read from a stale snapshot, or write unsafely.
        with contextlib.suppress(FileExistsError):  # created meanwhile by another process: theirs is fine
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            current = stat.S_IMODE(file.stat().st_mode)
            if current & 0o077:
                os.chmod(file, current & 0o700)
        except (FileNotFoundError, PermissionError):
            pass  # absent, or not ours to change


class SqliteFile:
    def __init__(self, path: str | Path, schema: str, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        create_private(self.path)
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
