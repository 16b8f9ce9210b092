"""Who owns a transcript's rows, and releasing one run's rows (retention) without touching another's — on
both backends, encrypted at rest or not, and with writers running while a release deletes."""

from __future__ import annotations

import sqlite3
import threading

import psycopg
import pytest

from agentic import Message
from duragent._config.codec import AesGcmCodec, KeyRing, new_key
from duragent._stores.encrypted import EncryptedTranscriptStore
from duragent._stores.postgres import Database, PostgresTranscriptStore
from duragent._stores.sqlite_file import SqliteFile
from duragent._stores.transcripts import (
    EMPTY,
    Released,
    SqliteTranscriptStore,
    TranscriptNotFound,
    Transcripts,
    releasable,
)
from tests.support.backends import Backend

SHARED = [Message("system", "Settle invoices."), Message("user", "Settle invoice inv-9")]


@pytest.fixture(params=["plain", "encrypted"])
def transcripts(request: pytest.FixtureRequest, backend: Backend) -> Transcripts:
    store = backend.transcript_store()
    if request.param == "encrypted":
        store = EncryptedTranscriptStore(store, AesGcmCodec(KeyRing.parse(f"k1:{new_key()}")))
    return Transcripts(store)


def test_release_deletes_a_runs_own_rows_and_keeps_the_rows_another_run_shares(transcripts, backend):
    # Two runs of one agent with the same task share their first two nodes and blobs.
    a = transcripts.append(transcripts.append(EMPTY, SHARED, "run-a"), [Message("assistant", "A's answer")], "run-a")
    preview, ref = transcripts.claim_check("x" * 2000, 100, 10_000, "a tool output", "run-a")
    b = transcripts.append(EMPTY, [*SHARED, Message("assistant", "B's answer")], "run-b")
    assert backend.rows("nodes") == 4 and backend.rows("blobs") == 5  # 2 shared + 1 each; A's claim check

    store = releasable(transcripts.store)
    assert ref in store.owned_blobs("run-a") and len(store.owned_blobs("run-a")) == 4
    released = store.release("run-a")

    assert released == Released(nodes=1, blobs=2, shared=4)  # A's answer and its output; 2 nodes + 2 blobs kept
    assert backend.rows("nodes") == 3 and backend.rows("blobs") == 3
    fresh = Transcripts(transcripts.store)  # no cache: everything B needs is really still stored
    assert [m.content for m in fresh.load(b)] == ["Settle invoices.", "Settle invoice inv-9", "B's answer"]
    with pytest.raises(TranscriptNotFound):
        fresh.load(a)
    with pytest.raises(TranscriptNotFound):
        fresh.resolve(preview, ref)
    assert store.owned_blobs("run-a") == []
    assert store.release("run-a") == Released()  # a second release (a prune re-run after a crash): nothing


def test_the_last_owner_released_takes_the_shared_rows_with_it(transcripts, backend):
    transcripts.append(EMPTY, SHARED, "run-a")
    transcripts.append(EMPTY, SHARED, "run-b")
    assert backend.rows("owners") == 8  # 2 nodes + 2 blobs, each owned twice
    store = releasable(transcripts.store)
    assert store.release("run-a") == Released(nodes=0, blobs=0, shared=4)
    assert store.release("run-b") == Released(nodes=2, blobs=2, shared=0)
    assert backend.rows("nodes") == backend.rows("blobs") == backend.rows("owners") == 0


def test_rows_written_without_an_owner_are_never_released(transcripts, backend):
    """Rows a program writes without naming a run belong to nobody: a release leaves them, even when a
    released run also owned them."""
    head = transcripts.append(EMPTY, SHARED)
    transcripts.append(EMPTY, SHARED, "run-a")
    assert releasable(transcripts.store).release("run-a") == Released(nodes=0, blobs=0, shared=4)
    assert backend.rows("nodes") == 2 and backend.rows("owners") == 4
    assert Transcripts(transcripts.store).load(head) == SHARED


def test_a_writer_of_the_same_rows_is_never_broken_by_a_concurrent_release(backend):
    """Run B writes exactly the rows run A owns while A is released, over and over: whichever commits first,
    B's transcript is whole afterwards (a release never deletes a row whose owner committed before it, and a
    write after it inserts the row again)."""
    writer_store, pruner_store = backend.transcript_store(), backend.transcript_store()  # two processes' worth
    failures: list[str] = []
    for round in range(40):
        messages = [*SHARED, Message("assistant", f"answer {round}")]
        Transcripts(pruner_store).append(EMPTY, messages, f"a-{round}")
        head = _write_during_release(Transcripts(writer_store), messages, f"b-{round}", pruner_store, f"a-{round}")
        try:
            assert Transcripts(pruner_store).load(head) == messages  # a fresh reader: no cache
        except TranscriptNotFound as exc:
            failures.append(f"round {round}: {exc}")
    assert not failures


def _write_during_release(
    writer: Transcripts, messages: list[Message], owner: str, pruner_store: object, released: str
) -> str:
    start = threading.Barrier(2)
    heads: list[str] = []

    def write() -> None:
        start.wait()
        heads.append(writer.append(EMPTY, messages, owner))

    thread = threading.Thread(target=write)
    thread.start()
    start.wait()
    releasable(pruner_store).release(released)  # type: ignore[arg-type]
    thread.join()
    [head] = heads
    return head


def test_rows_stored_before_owners_existed_are_kept_forever_sqlite(tmp_path):
    """A transcripts.db from before owners were recorded: opening it gives its rows to nobody, once, so a
    run still open across the upgrade can never lose a row it shares with a pruned one."""
    path = tmp_path / "transcripts.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE blobs (ref TEXT PRIMARY KEY, body TEXT NOT NULL);"
            "CREATE TABLE nodes (ref TEXT PRIMARY KEY, previous TEXT NOT NULL, message TEXT NOT NULL);"
        )
    old = SqliteTranscriptStore.__new__(SqliteTranscriptStore)
    old.file = SqliteFile(path, "", 5.0)  # the old code's writes: rows, no owners
    head = Transcripts(_NoOwners(old)).append(EMPTY, SHARED)
    upgraded = Transcripts(SqliteTranscriptStore(path))
    upgraded.append(EMPTY, SHARED, "run-a")
    assert releasable(upgraded.store).release("run-a") == Released(nodes=0, blobs=0, shared=4)
    assert Transcripts(SqliteTranscriptStore(path)).load(head) == SHARED


def test_rows_stored_before_owners_existed_are_kept_forever_postgres(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE transcript_blobs (ref TEXT PRIMARY KEY, body BYTEA NOT NULL);"
            "CREATE TABLE transcript_nodes (ref TEXT PRIMARY KEY, previous TEXT NOT NULL, message TEXT NOT NULL);"
            "INSERT INTO transcript_blobs VALUES ('sha256:old', 'old body');"
            "INSERT INTO transcript_nodes VALUES ('sha256:node', 'empty', 'sha256:old');"
        )
    database = Database(postgres_url)
    try:
        store = PostgresTranscriptStore(database)
        store.put_messages({"sha256:old": "old body"}, [("sha256:node", "empty", "sha256:old")], "run-a")
        assert store.release("run-a") == Released(nodes=0, blobs=0, shared=2)
        assert store.get_nodes(["sha256:node"]) and store.get_blobs(["sha256:old"])
    finally:
        database.close()


def test_releasing_nobody_is_refused(backend):
    with pytest.raises(ValueError, match="never released"):
        releasable(backend.transcript_store()).release("")


class _NoOwners:
    """What the code before owners wrote: the rows alone."""

    def __init__(self, store: SqliteTranscriptStore) -> None:
        self.store = store

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None:
        with self.store.file.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO blobs(ref, body) VALUES (?, ?)", blobs.items())

    def put_messages(self, blobs: dict[str, str], nodes: list[tuple[str, str, str]], owner: str | None = None) -> None:
        self.put_blobs(blobs)
        with self.store.file.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO nodes(ref, previous, message) VALUES (?, ?, ?)", nodes)

    def get_blobs(self, refs: list[str]) -> dict[str, str]:
        return self.store.get_blobs(refs)

    def get_nodes(self, refs: list[str]) -> dict[str, tuple[str, str]]:
        return self.store.get_nodes(refs)
