"""The SQLite stores on a small disk of the test's own that fills up, then turns read-only:
every store's error names its file and the fault, nothing is half-written (the rows are counted), and the
same write succeeds once when space returns. A run over them: tests/stores/test_disk_fault_runs.py."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic import Message
from agentic.memory import Fact
from duragent._baseline.store import Progress, StepSpec, Store
from duragent._stores.disk_faults import StoreDiskFault
from duragent._stores.errors import StoreUnavailable
from duragent._stores.facts import SqliteFactStore
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import EMPTY, SqliteTranscriptStore, Transcripts
from tests.support.small_disk import SmallDisk, small_disk

# Processes of its own: `mount`, as root.
pytestmark = pytest.mark.system

BIG = "x" * 200_000  # more than any free block a full disk has left: the write must reach the disk


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


def rows(path: Path, table: str) -> int:
    """Counted by a connection of its own, read-only: what is durably in the file, not what a store caches."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def faulted(call: object, path: Path, problem: str) -> StoreDiskFault:
    with pytest.raises(StoreDiskFault) as caught:
        call()  # type: ignore[operator]
    fault = caught.value
    assert isinstance(fault, StoreUnavailable), "the error every caller already retries"
    assert fault.path == path and str(fault).startswith(f"SQLite store {path} is unavailable: {problem}")
    return fault


def test_a_full_disk_fails_every_store_naming_its_file_and_the_write_succeeds_once_space_returns(disk) -> None:
    ledger = EffectsLedger(disk.path / "ledger.db")
    transcripts = Transcripts(SqliteTranscriptStore(disk.path / "transcripts.db"))
    facts = SqliteFactStore(disk.path / "facts.db")
    checkpoints = Store(disk.path / "baseline.db")
    ledger.apply("r:1", run_id="r", tool="charge", args={}, perform=lambda: "one")
    head = transcripts.append(EMPTY, [Message("user", "before")], "r")
    facts.write("c7", Fact("city", "Pune", "t-1"), writer="test")
    checkpoints.create_run(
        "r", "billing", "{}", owner="w", lease_seconds=60, webhook_url=None, progress=Progress(0, 2, "")
    )
    spec = StepSpec(step=1, name="model", input_hash="h", label="model call 1")

    def tables() -> dict[str, object]:
        """Every row of every store the test writes to."""
        return {
            "ledger": rows(ledger.path, "effects"),
            "nodes": rows(disk.path / "transcripts.db", "nodes"),
            "blobs": rows(disk.path / "transcripts.db", "blobs"),
            "facts": rows(disk.path / "facts.db", "facts"),
            "steps": rows(checkpoints.path, "steps"),
            "outputs": rows(checkpoints.path, "outputs"),
        }

    before = tables()

    disk.fill()
    full = "the disk is full"

    def apply() -> tuple[str, bool]:
        return ledger.apply("r:2", run_id="r", tool="charge", args={"memo": BIG}, perform=lambda: "two")

    faulted(apply, ledger.path, full)
    appended = [Message("assistant", BIG)]
    faulted(lambda: transcripts.append(head, appended, "r"), disk.path / "transcripts.db", full)
    faulted(lambda: facts.write("c7", Fact("note", BIG[:16_000], "t-2"), writer="test"), disk.path / "facts.db", full)

    def complete() -> None:
        checkpoints.complete("r", "w", spec, {"reply": BIG}, started_at="t", progress=Progress(1, 2, "model call 1"))

    faulted(complete, checkpoints.path, full)
    # Nothing half-written: every table holds what it held (the ledger's perform ran inside the rolled-back
    # transaction: a provider behind it would de-duplicate the retry by the key).
    after = tables()
    assert after == before

    disk.free()
    # The same writes, retried on the same objects (the connections kept no transaction open), each once.
    assert apply() == ("two", True) and apply() == ("two", False)
    longer = transcripts.append(head, appended, "r")
    assert [m.content for m in transcripts.load(longer)] == ["before", BIG]
    facts.write("c7", Fact("note", BIG[:16_000], "t-2"), writer="test")
    complete()
    assert rows(ledger.path, "effects") == before["ledger"] + 1
    assert rows(disk.path / "transcripts.db", "nodes") == before["nodes"] + 1
    assert rows(disk.path / "facts.db", "facts") == before["facts"] + 1
    assert (rows(checkpoints.path, "steps"), rows(checkpoints.path, "outputs")) == (1, 1)
    for name in ("ledger.db", "transcripts.db", "facts.db", "baseline.db"):
        with sqlite3.connect(disk.path / name) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), name
    checkpoints.close()


def _write_one_of_each(path: Path) -> None:
    ledger = EffectsLedger(path / "ledger.db")
    ledger.apply("r:1", run_id="r", tool="charge", args={}, perform=lambda: "one")
    Transcripts(SqliteTranscriptStore(path / "transcripts.db")).append(EMPTY, [Message("user", "hi")], "r")
    SqliteFactStore(path / "facts.db").write("c7", Fact("city", "Pune", "t-1"), writer="test")
    Store(path / "baseline.db").close()


def test_a_read_only_disk_fails_every_store_naming_its_file_and_they_work_once_it_is_writable(disk) -> None:
    _write_one_of_each(disk.path)
    gc.collect()  # the stores' connections closed: Linux remounts a disk read-only only when nothing writes it
    disk.read_only()
    cannot = "it cannot be opened (a read-only disk"
    faulted(lambda: EffectsLedger(disk.path / "ledger.db"), disk.path / "ledger.db", cannot)
    faulted(lambda: SqliteTranscriptStore(disk.path / "transcripts.db"), disk.path / "transcripts.db", cannot)
    faulted(lambda: SqliteFactStore(disk.path / "facts.db").namespace("c7").records(), disk.path / "facts.db", cannot)
    faulted(lambda: Store(disk.path / "baseline.db"), disk.path / "baseline.db", cannot)
    faulted(lambda: EffectsLedger(disk.path / "new.db"), disk.path / "new.db", "the disk is read-only")

    disk.writable()
    ledger = EffectsLedger(disk.path / "ledger.db")
    assert [e.key for e in ledger.effects()] == ["r:1"]
    assert ledger.apply("r:2", run_id="r", tool="charge", args={}, perform=lambda: "two") == ("two", True)
    assert Store(disk.path / "baseline.db").query("SELECT count(*) FROM runs")[0][0] == 0
    assert not (disk.path / "new.db").exists()
