"""Local state is readable by its owner only: the data directory is created 0700, and every
SQLite file (the ledger, the transcript store, the checkpoint store, their -wal/-shm) 0600, whatever the
umask; files an earlier version left readable are tightened when opened."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentic import Message
from duragent._baseline.store import Store
from duragent._config.settings import ROOT
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import EMPTY, SqliteTranscriptStore, Transcripts


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_stores_are_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        data = tmp_path / "home" / ".data"
        ledger = EffectsLedger(data / "ledger.db")
        ledger.apply("k", run_id="r", tool="t", args={"a": 1}, perform=lambda: "done")
        Transcripts(SqliteTranscriptStore(data / "transcripts.db")).append(EMPTY, [Message("user", "secret")])
        store = Store(data / "baseline.db")
        store.close()
    finally:
        os.umask(old)
    assert mode(data) == 0o700 and mode(data.parent) == 0o700  # every directory it had to create
    files = sorted(data.glob("*.db*"))
    assert {p.name for p in files} >= {"ledger.db", "transcripts.db", "baseline.db", "ledger.db-wal"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_existing_readable_files_are_tightened(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    EffectsLedger(path)
    os.chmod(path, 0o644)
    EffectsLedger(path)
    assert mode(path) == 0o600
    shared = tmp_path / "shared"  # a directory that exists already is the operator's: left alone
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    EffectsLedger(shared / "ledger.db")
    assert mode(shared) == 0o755 and mode(shared / "ledger.db") == 0o600


@pytest.mark.system
def test_opening_a_second_store_on_a_file_never_drops_the_first_ones_locks(tmp_path: Path) -> None:
    """Closing any descriptor of a SQLite file drops every POSIX lock the process holds on it: a store opened
    on an existing file must not open the file itself, or the first store reads stale snapshots (seen: a
    test process's ledger stuck at 3 effects while a worker wrote more)."""
    path = tmp_path / "l.db"
    first = EffectsLedger(path)
    first.apply("k0", run_id="r", tool="t", args={}, perform=lambda: "x")
    seen = []
    for i in range(1, 5):
        writer = "from duragent._stores.ledger import EffectsLedger; "
        writer += f"EffectsLedger({str(path)!r}).apply('k{i}', run_id='r', tool='t', args={{}}, perform=lambda: 'x')"
        subprocess.run([sys.executable, "-c", writer], check=True, cwd=ROOT, timeout=60)
        EffectsLedger(path)  # another store object on the same file, in this process
        seen.append(len(first.effects()))
    assert seen == [2, 3, 4, 5]
