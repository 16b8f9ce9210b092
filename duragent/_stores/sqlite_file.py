"""One SQLite file shared by threads and processes: WAL, a busy timeout, a connection per thread, and
writes that queue instead of failing.

Each thread gets its own connection, kept open (opening one per operation cost a worker several
milliseconds a run); no connection is shared between threads, no transaction is held between operations.

Writes go through `write_transaction`, which does two things SQLite's busy timeout alone does not:
- Threads of one process take turns on a per-file lock in Python before `BEGIN IMMEDIATE`. SQLite's busy
  handler is a lottery (every waiter sleeps and polls, up to 100 ms apart), so with hundreds of threads
  writing one file an unlucky one waited past its timeout and got "database is locked" (4 of
  1,000 baseline runs at 1,000 threads, 91 of 1,000 with 10-step runs). A blocked thread on a Python lock
  is woken when the lock is free: no polling, no starvation by timeout.
- Writers in other processes (workers, a zombie worker, the command line) still meet on SQLite's lock: a
  `BEGIN IMMEDIATE` that times out busy is retried with jittered backoff until `patience` runs out (`when_free`).
  Only the BEGIN is retried — it has done nothing yet — never a statement inside the transaction. The
  switch to WAL when a file is opened is retried the same way (SQLite does not wait for it at all).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from duragent._stores.disk_faults import named_disk_faults

# How long a write waits for other processes in all (busy timeouts and backoff together) before the error
# escapes: far beyond any transaction of ours (milliseconds), short enough that a wedged file is reported.
WRITE_PATIENCE = 300.0
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


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


_writers: dict[str, threading.RLock] = {}
_writers_guard = threading.Lock()


def writer_lock(path: str | Path) -> threading.RLock:
    """This process's lock for writing `path` (one per file, shared by every connection to it).
    Re-entrant, so a thread that already writes the file is not deadlocked by a nested helper."""
    key = os.path.realpath(path)
    with _writers_guard:
        lock = _writers.get(key)
        if lock is None:
            lock = _writers[key] = threading.RLock()
        return lock


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY  # extended codes (SQLITE_BUSY_SNAPSHOT...) keep the primary in the low byte
    return "database is locked" in str(exc) or "database table is locked" in str(exc)


def when_free(db: sqlite3.Connection, statement: str, patience: float = WRITE_PATIENCE) -> sqlite3.Cursor:
    """`statement`, retried with jittered backoff while another process holds the lock it needs, for up to
    `patience` s. Only for statements that do nothing when they fail busy: `BEGIN IMMEDIATE`, and the switch to
    WAL, for which SQLite answers busy at once, without its busy handler, while another process is switching
    the same new file (2 processes opening one new file at once: 69 of 300 got "database is locked")."""
    deadline = time.monotonic() + patience
    delay = 0.01
    while True:
        try:
            return db.execute(statement)
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay * random.uniform(0.5, 1.5))  # jitter: processes that collided do not collide again
        delay = min(delay * 2, 1.0)


def use_wal(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode (it stays so); safe while other processes open the same new file."""
    when_free(db, "PRAGMA journal_mode=WAL")


@contextmanager
def write_transaction(
    db: sqlite3.Connection, path: str | Path, patience: float = WRITE_PATIENCE, lock: threading.RLock | None = None
) -> Iterator[sqlite3.Connection]:
    """A write transaction on `db` (a connection to `path`): the write lock is taken up front, so a
    check-then-write cannot race; committed on success, rolled back on any exception. `lock`: `path`'s
    `writer_lock`, when the caller holds it already (resolving the path costs a realpath per write)."""
    with lock or writer_lock(path):
        when_free(db, "BEGIN IMMEDIATE", patience)
        try:
            yield db
            if db.in_transaction:
                db.execute("COMMIT")
        except BaseException:
            # A failed COMMIT too (a full disk): SQLite may leave the transaction open after one, and this
            # connection is kept for the thread's next write, whose BEGIN would then fail for ever.
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # the first error is the one worth reporting
                    db.execute("ROLLBACK")
            raise


class SqliteFile:
    def __init__(self, path: str | Path, schema: str, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        with named_disk_faults(self.path):
            create_private(self.path)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._writer = writer_lock(self.path)
        with self._writer, self.connect() as db:
            use_wal(db)
            db.executescript(schema)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's autocommit connection: reads need no transaction; writes use `transaction()`. A full
        or read-only disk, here or in the caller's statements, is a `StoreDiskFault` naming this file."""
        with named_disk_faults(self.path):
            db: sqlite3.Connection | None = getattr(self._local, "db", None)
            if db is None:
                db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
                db.execute("PRAGMA synchronous=NORMAL")
                self._local.db = db
            yield db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """`BEGIN IMMEDIATE` (see `write_transaction`): the write lock is taken up front."""
        with self.connect() as db, write_transaction(db, self.path, lock=self._writer) as tx:
            yield tx
