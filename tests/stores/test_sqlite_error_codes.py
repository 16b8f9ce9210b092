"""SQLite's own errors as the stores meet them: Python reports the *extended* result code (a file deleted under an
open connection is SQLITE_READONLY_DBMOVED, 1032, not SQLITE_READONLY, 8), which still names a disk fault; and a
COMMIT that fails leaves SQLite's transaction open, which the store rolls back so the connection, kept for the
thread's next write, can begin another."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from duragent._stores.disk_faults import StoreDiskFault, disk_fault
from duragent._stores.sqlite_file import write_transaction


def test_an_extended_sqlite_code_is_still_a_disk_fault_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE t (x)")
    path.unlink()  # the file is gone from under the open connection: its next write is refused
    with pytest.raises(sqlite3.OperationalError) as refused:
        db.execute("INSERT INTO t VALUES (1)")
    assert refused.value.sqlite_errorcode == 1032  # SQLITE_READONLY_DBMOVED: extended, primary 8
    fault = disk_fault(refused.value, path)
    assert isinstance(fault, StoreDiskFault) and fault.problem == "the file or its disk is read-only"
    assert str(path) in str(fault)


def test_a_failed_commit_is_rolled_back_and_the_connection_writes_again(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(
        "PRAGMA foreign_keys = ON;"
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
        "CREATE TABLE child (parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);"
    )
    # A deferred constraint is checked at COMMIT: the COMMIT fails, and SQLite keeps the transaction open.
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), write_transaction(db, path) as tx:
        tx.execute("INSERT INTO child VALUES (42)")
    assert not db.in_transaction
    with write_transaction(db, path) as tx:  # the next write begins, and commits
        tx.execute("INSERT INTO parent VALUES (1)")
        tx.execute("INSERT INTO child VALUES (1)")
    assert db.execute("SELECT parent FROM child").fetchall() == [(1,)]
