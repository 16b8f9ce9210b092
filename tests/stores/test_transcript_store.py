"""The content-addressed transcript store: idempotent writes, stable heads, claim checks, a hard cap —
on both backends (SQLite files and a real PostgreSQL), encrypted at rest or not."""

from __future__ import annotations

import threading

import pytest

from agentic import Message, tool_call
from duragent._config.codec import AesGcmCodec, KeyRing, new_key
from duragent._stores.encrypted import EncryptedTranscriptStore
from duragent._stores.transcripts import EMPTY, PayloadTooLarge, SqliteTranscriptStore, TranscriptNotFound, Transcripts
from tests.support.backends import Backend


@pytest.fixture
def transcripts(backend: Backend) -> Transcripts:
    return Transcripts(backend.transcript_store())


MESSAGES = [
    Message("system", "Settle invoices."),
    Message("user", "Settle invoice inv-9"),
    Message("assistant", "", tool_calls=(tool_call("charge", {"invoice": "inv-9"}, id="c1"),)),
    Message("tool", "charged", tool_call_id="c1"),
]


def test_a_transcript_round_trips_and_its_head_names_its_content(transcripts, tmp_path):
    head = transcripts.append(EMPTY, MESSAGES)
    assert transcripts.load(head) == MESSAGES
    # The same messages give the same head in another store, of either backend: a head is the transcript's name.
    other = Transcripts(SqliteTranscriptStore(tmp_path / "other.db"))
    assert other.append(EMPTY, MESSAGES) == head
    assert transcripts.append(EMPTY, MESSAGES[:3]) != head


def test_appending_in_pieces_equals_appending_at_once_and_writes_are_idempotent(transcripts, backend):
    whole = transcripts.append(EMPTY, MESSAGES)
    piecewise = transcripts.append(transcripts.append(EMPTY, MESSAGES[:2]), MESSAGES[2:])
    assert piecewise == whole
    again = transcripts.append(EMPTY, MESSAGES)  # a retried activity writes the same rows again
    assert again == whole
    Transcripts(backend.transcript_store()).append(EMPTY, MESSAGES)  # and so does another worker
    assert backend.rows("nodes") == 4
    assert backend.rows("blobs") == 4


def test_a_fresh_reader_without_cache_reads_the_same(transcripts, backend):
    head = transcripts.append(EMPTY, MESSAGES)
    longer = transcripts.append(head, [Message("assistant", "done")])
    fresh = Transcripts(backend.transcript_store())  # a new worker after a crash, or on another host
    assert fresh.load(longer) == [*MESSAGES, Message("assistant", "done")]
    assert transcripts.load(head) == MESSAGES  # the cache never serves a longer transcript for a shorter head


def test_claim_check_keeps_small_contents_and_stores_large_ones(transcripts):
    assert transcripts.claim_check("small", 100, 1000, "x") == ("small", None)
    body = "y" * 5000
    preview, ref = transcripts.claim_check(body, 100, 10_000, "the output")
    assert ref is not None and len(preview) < 300 and "5,000 bytes" in preview
    assert transcripts.resolve(preview, ref) == body
    stub = Message("tool", preview, tool_call_id="c1", content_ref=ref)
    head = transcripts.append(EMPTY, [stub])
    assert transcripts.load(head) == [Message("tool", body, tool_call_id="c1")]
    assert transcripts.load(head, expand=False) == [stub]


def test_any_text_round_trips_even_a_nul_character(transcripts):
    # PostgreSQL text cannot hold NUL; a tool's raw output may. Bodies are bytes there.
    body = "binary-ish \x00 output, ünïcødé, " + "z" * 300
    _, ref = transcripts.claim_check(body, 100, 10_000, "the output")
    assert transcripts.resolve("", ref) == body


def test_over_the_hard_cap_is_refused_clearly(transcripts):
    with pytest.raises(PayloadTooLarge, match="the output is 2,000 bytes, over the hard cap of 1,000 bytes"):
        transcripts.claim_check("z" * 2000, 100, 1000, "the output")


def test_an_unknown_head_is_a_clear_error(transcripts):
    with pytest.raises(TranscriptNotFound, match=r"^transcript head sha256:nope not found in this worker's store$"):
        transcripts.load("sha256:nope")
    with pytest.raises(TranscriptNotFound, match="not found in this worker's store"):
        transcripts.require("sha256:nope")
    transcripts.require(EMPTY)


def test_a_missing_blob_is_a_clear_error(backend):
    with pytest.raises(KeyError, match=r"1 blob\(s\) missing from the transcript store, e.g. sha256:gone"):
        backend.transcript_store().get_blobs(["sha256:gone"])


def test_a_transcript_written_on_another_host_is_not_found_here(tmp_path):
    """Two hosts, each with its own SQLite file: what one wrote, the other cannot read, and says so — whether
    it is asked for the head itself or for a longer transcript it built on top of that head."""
    host_a = Transcripts(SqliteTranscriptStore(tmp_path / "a" / "transcripts.db"))
    host_b = Transcripts(SqliteTranscriptStore(tmp_path / "b" / "transcripts.db"))
    head = host_a.append(EMPTY, MESSAGES[:3])
    host_a.require(head)
    with pytest.raises(TranscriptNotFound, match="not found in this worker's store"):
        host_b.require(head)
    longer = host_b.append(head, MESSAGES[3:])  # a tool activity on host B stores its result on A's head
    with pytest.raises(
        TranscriptNotFound, match=r"transcript head sha256:\w+… not found .*\(its node sha256:\w+… is missing\)"
    ):
        host_b.load(longer)
    assert host_a.load(head) == MESSAGES[:3]


class CountingStore(SqliteTranscriptStore):
    """A real SQLite store that counts its node lookups."""

    lookups = 0

    def get_nodes(self, refs):  # type: ignore[no-untyped-def]
        self.lookups += 1
        return super().get_nodes(refs)


def test_what_a_process_appends_to_a_transcript_it_read_is_read_back_without_the_store(tmp_path):
    store = CountingStore(tmp_path / "transcripts.db")
    transcripts = Transcripts(store)
    head = transcripts.append(EMPTY, MESSAGES[:2])  # the model activity stores the new messages...
    assert transcripts.load(head) == MESSAGES[:2]  # ...reads the transcript...
    longer = transcripts.append(head, MESSAGES[2:])  # ...stores the reply; the tool activity then checks
    transcripts.require(longer)  # the head and stores its result; the next model call reads it all
    assert transcripts.load(longer) == MESSAGES
    assert store.lookups == 0
    assert Transcripts(SqliteTranscriptStore(tmp_path / "transcripts.db")).load(longer) == MESSAGES  # and it is stored


def test_concurrent_writers_of_the_same_transcript_agree(backend):
    # Two workers (threads here, each with its own store object) append the same messages at once.
    stores = [Transcripts(backend.transcript_store()) for _ in range(4)]
    heads: list[str] = []
    start = threading.Barrier(len(stores))

    def write(transcripts: Transcripts) -> None:
        start.wait()
        for n in range(1, len(MESSAGES) + 1):
            heads.append(transcripts.append(EMPTY, MESSAGES[:n]))

    threads = [threading.Thread(target=write, args=(t,)) for t in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(heads)) == len(MESSAGES)  # four prefixes, the same four heads from every writer
    assert backend.rows("nodes") == 4 and backend.rows("blobs") == 4


def test_encrypted_at_rest_on_either_backend(backend):
    secret = "card 4242-4242-4242-4242"
    keys = KeyRing.parse(f"k1:{new_key()}")
    sealed = Transcripts(EncryptedTranscriptStore(backend.transcript_store(), AesGcmCodec(keys)))
    messages = [Message("user", f"pay with {secret}"), Message("tool", secret * 200, tool_call_id="c1")]
    head = sealed.append(EMPTY, messages)
    _, ref = sealed.claim_check(secret * 300, 100, 100_000, "the output")

    raw = backend.raw_bodies()
    assert raw and secret.encode() not in raw  # ciphertext at rest, claim-checked blobs included
    reader = Transcripts(EncryptedTranscriptStore(backend.transcript_store(), AesGcmCodec(keys)))
    assert reader.load(head) == messages and reader.resolve("", ref) == secret * 300
    # Without the keys the bodies are unreadable, not silently wrong.
    with pytest.raises(ValueError):  # the stored text is "enc:" + base64, not a message
        Transcripts(backend.transcript_store()).load(head)


def test_a_worker_reads_the_transcripts_of_many_concurrent_runs_without_the_store(tmp_path):
    # 500 runs interleaved step by step, as a worker under load sees them: each run's transcript stays in the
    # cache (its older heads give way to the newer), so no step reads the store back. With a cache that kept
    # each run's last few heads, 64 entries in all, every model call here walked its run's whole chain again.
    store = CountingStore(tmp_path / "transcripts.db")
    transcripts = Transcripts(store)
    runs = [f"run-{n}" for n in range(500)]
    heads = {run: transcripts.append(EMPTY, [Message("user", run)], run) for run in runs}
    for step in range(5):
        for run in runs:
            messages = transcripts.load(heads[run])  # the model call reads the transcript...
            assert len(messages) == 1 + 2 * step and messages[0].content == run
            reply = transcripts.append(heads[run], [Message("assistant", f"call {step}")], run)  # ...stores
            transcripts.require(reply)  # the reply; the tool activity checks the head and stores its result
            heads[run] = transcripts.append(reply, [Message("tool", f"ok {step}", tool_call_id="c")], run)
    assert store.lookups == 0
    assert len(Transcripts(SqliteTranscriptStore(tmp_path / "transcripts.db")).load(heads["run-7"])) == 11


def test_a_head_read_again_after_its_run_moved_on_is_read_from_the_store(tmp_path):
    # A retried model call hands the same (older) head again: it is no longer cached, and reads right.
    store = CountingStore(tmp_path / "transcripts.db")
    transcripts = Transcripts(store)
    head = transcripts.append(EMPTY, MESSAGES[:2])
    longer = transcripts.append(head, MESSAGES[2:])
    assert transcripts.load(head) == MESSAGES[:2] and store.lookups > 0
    assert transcripts.load(longer) == MESSAGES
