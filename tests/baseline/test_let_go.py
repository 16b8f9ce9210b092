"""A run that failed on a dead disk lets go of its lease without raising: the error the caller reports is the one
the run met (which may name another file), not the let-go's own on the same disk — the lease then expires by
itself."""

from __future__ import annotations

from pathlib import Path

from duragent._baseline.jobs import _let_go
from duragent._baseline.store import Store


def test_letting_go_on_a_store_that_cannot_be_written_raises_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "baseline.db")
    store._db.execute("PRAGMA query_only = ON")  # every write now fails: SQLITE_READONLY, the disk's fault
    _let_go(store, "run-1", "worker-1", "StoreDiskFault: SQLite store ledger.db is unavailable: the disk is full")
