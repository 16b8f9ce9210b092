"""A SQLite store's disk filling up or turning read-only, reported as what it is: `StoreUnavailable` naming the
file and the fault, instead of `sqlite3.OperationalError: database or disk is full` with no path.

Why `StoreUnavailable`: it is the error every caller already treats as "retry later, nothing was done" (the
demo tools turn it into `ToolRetry`, an activity that raises it is retried by Temporal, the command lines print
it as one line with exit 1). That is true here: a failed write rolls its transaction back whole (SQLite's
journal), so a retry after space returns writes the same rows once. Errors that are not the disk's (a
constraint, a syntax error, a lock) pass through unchanged.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from duragent._stores.errors import StoreUnavailable

# SQLite's primary result codes for a disk that cannot take a write, and what each means to an operator.
_SQLITE_FAULTS = {
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_READONLY: "the file or its disk is read-only",
    sqlite3.SQLITE_IOERR: "the disk failed a read or write",
    # A WAL file on a read-only disk: SQLite cannot create its -shm index, so it cannot open the file at all.
    sqlite3.SQLITE_CANTOPEN: "it cannot be opened (a read-only disk, or its directory is gone)",
}
_OS_FAULTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the disk is read-only",
    errno.EIO: "the disk failed a read or write",
}


class StoreDiskFault(StoreUnavailable):
    """The store's file could not be opened or written because of its disk. `path` is the file."""

    def __init__(self, path: Path, problem: str, detail: str) -> None:
        super().__init__(f"SQLite store {path} is unavailable: {problem} ({detail}); nothing was written")
        self.path = path
        self.problem = problem


def disk_fault(exc: BaseException, path: str | Path) -> StoreDiskFault | None:
    """`exc` as a `StoreDiskFault` of the store at `path`, if its disk is the cause; else None."""
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", None)
        problem = _SQLITE_FAULTS.get(code & 0xFF) if code is not None else None  # extended codes keep the primary
        if problem is not None:
            return StoreDiskFault(Path(path), problem, f"{getattr(exc, 'sqlite_errorname', 'SQLite')}: {exc}")
    elif isinstance(exc, OSError) and exc.errno in _OS_FAULTS:
        return StoreDiskFault(Path(path), _OS_FAULTS[exc.errno], exc.strerror or str(exc))
    return None


@contextmanager
def named_disk_faults(path: str | Path) -> Iterator[None]:
    """Whatever runs inside: a disk fault of the store at `path` leaves as its `StoreDiskFault`."""
    try:
        yield
    except (sqlite3.OperationalError, OSError) as exc:
        fault = disk_fault(exc, path)
        if fault is None:
            raise
        raise fault from exc
